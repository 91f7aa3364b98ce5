import { beforeAll, describe, expect, it } from 'vitest';
import { expectInvalidParameter } from './http-assertions.js';
import type { HttpResult } from './stack.js';

/** Query strings every collection refuses, with the `details.field` and `details.issue` of the 400. */
const BAD_PAGE_QUERIES: [string, string, string][] = [
  ['limit=0', 'limit', 'OutOfRange'],
  ['limit=101', 'limit', 'OutOfRange'],
  ['limit=-1', 'limit', 'OutOfRange'],
  ['limit=abc', 'limit', 'InvalidFormat'],
  ['limit=1.5', 'limit', 'InvalidFormat'],
  ['limit=1e1', 'limit', 'InvalidFormat'],
  ['limit=1&limit=2', 'limit', 'InvalidFormat'],
  ['includeTotal=yes', 'includeTotal', 'InvalidFormat'],
  ['cursor=not-a-cursor', 'cursor', 'InvalidCursor'],
  ['cursor=', 'cursor', 'InvalidCursor'],
];

/** Reads a collection page with the given query string (`''` or `'?limit=2'`). */
export type ListPage = (query?: string) => Promise<HttpResult>;

/** A collection under test; functions, because the stack only exists once the suite runs. */
export interface PagedCollection {
  /** The path of a new, empty collection, e.g. the sets of a new shipment. */
  newCollection(): Promise<string>;
  /** Creates a resource in the collection at `path` and returns it as GET shows it. */
  create(path: string): Promise<{ id: string }>;
  /** GETs the collection at `path` with a query string. */
  list(path: string, query?: string): Promise<HttpResult>;
}

/** The array key of a collection: `items` in the OMS, `devices` in the DMS (spec, "Pagination metadata"). */
export type CollectionKey = 'items' | 'devices';

/** The query of the page after `page`, with `query` (e.g. `limit=2&`) before the cursor. */
const nextPage = (page: HttpResult, query = ''): string => `?${query}cursor=${encodeURIComponent(page.body.metadata.nextCursor)}`;

/**
 * Registers the tests of docs/api.md, "Paging", that hold for every collection: order, limit, cursors,
 * includeTotal, the default page size, resources created while paging, and refused query strings
 * (`unknownParameter` stands for a parameter the collection does not have).
 */
export function describePaging(
  name: string,
  unknownParameter: string,
  collection: () => PagedCollection,
  key: CollectionKey = 'items',
): void {
  const ids = (page: HttpResult): string[] => page.body[key].map((resource: { id: string }) => resource.id);
  describe(name, () => {
    let path: string;
    let created: { id: string }[];
    const list: ListPage = (query) => collection().list(path, query);

    beforeAll(async () => {
      path = await collection().newCollection();
      created = [];
      for (let i = 0; i < 5; i++) created.push(await collection().create(path));
    });

    it('answers an empty page for an empty collection', async () => {
      const response = await collection().list(await collection().newCollection());
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ [key]: [], metadata: { nextCursor: null } });
    });

    it('lists every resource, oldest first, as GET shows them', async () => {
      const response = await list('');
      expect(response.status, response.text).toBe(200);
      expect(Object.keys(response.body).sort()).toEqual([key, 'metadata'].sort());
      expect(response.body[key]).toEqual(created);
      expect(response.body.metadata).toEqual({ nextCursor: null });
    });

    it('pages with limit and cursor, counts with includeTotal, and ends with a null cursor', async () => {
      const first = await list('?limit=2&includeTotal=true');
      expect(ids(first)).toEqual([created[0].id, created[1].id]);
      expect(first.body.metadata).toEqual({ nextCursor: expect.any(String), total: 5 });
      const second = await list(nextPage(first, 'limit=2&'));
      expect(ids(second)).toEqual([created[2].id, created[3].id]);
      expect(second.body.metadata).toEqual({ nextCursor: expect.any(String) });
      const third = await list(nextPage(second, 'limit=2&includeTotal=false&'));
      expect(ids(third)).toEqual([created[4].id]);
      expect(third.body.metadata).toEqual({ nextCursor: null });
      // An exactly full last page has no next cursor either.
      expect((await list('?limit=5&includeTotal=true')).body.metadata).toEqual({ nextCursor: null, total: 5 });
    });

    it('accepts limits of 1 and 100, and defaults to 50', async () => {
      expect((await list('?limit=1')).body[key]).toHaveLength(1);
      expect((await list('?limit=100')).body[key]).toHaveLength(5);
      const large = await collection().newCollection();
      for (let i = 0; i < 51; i++) await collection().create(large);
      const page = await collection().list(large);
      expect(page.body[key]).toHaveLength(50);
      expect(page.body.metadata.nextCursor).toEqual(expect.any(String));
    });

    it('shows resources created while paging on a later page, exactly once', async () => {
      const at = await collection().newCollection();
      const read: ListPage = (query) => collection().list(at, query);
      const a = await collection().create(at);
      const b = await collection().create(at);
      const first = await read('?limit=1');
      expect(ids(first)).toEqual([a.id]);
      const c = await collection().create(at);
      const second = await read(nextPage(first, 'limit=1&'));
      expect(ids(second)).toEqual([b.id]);
      const third = await read(nextPage(second, 'limit=1&'));
      expect(ids(third)).toEqual([c.id]);
      expect(third.body.metadata.nextCursor).toBeNull();
    });

    it.each([...BAD_PAGE_QUERIES, [`${unknownParameter}=x`, unknownParameter, 'UnknownField']])(
      'rejects ?%s with 400 InvalidParameter',
      async (query, field, issue) => {
        expectInvalidParameter(await list(`?${query}`), field, issue);
      },
    );
  });
}

/** A cursor of `from` (which must hold more than one resource) is 400 InvalidCursor on `on`. */
export async function expectCursorRefused(from: ListPage, on: ListPage): Promise<void> {
  const page = await from('?limit=1');
  expect(page.body.metadata.nextCursor, page.text).toEqual(expect.any(String));
  expectInvalidParameter(await on(nextPage(page)), 'cursor', 'InvalidCursor');
}
