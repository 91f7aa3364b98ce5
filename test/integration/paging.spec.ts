import { randomUUID } from 'node:crypto';
import { CursorCodec, cursorBinding } from '@tracking/paging';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ShipmentsService } from '../../apps/oms/src/shipments/shipments.service.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createShipment, createShipments } from '../factories/shipment.factory.js';
import { expectInvalidParameter } from '../support/http-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';

interface Page {
  ids: string[];
  nextCursor: string | null;
  response: HttpResult;
}

/** GET one page; `query` is sent as written so tests control exactly what reaches the gateway. */
async function getPage(stack: TestStack, tenant: TestTenant, accountId: string, query = ''): Promise<Page> {
  const response = await stack.request('GET', `/v1/accounts/${accountId}/shipments${query ? `?${query}` : ''}`, {
    token: tenant.token,
  });
  expect(response.status, response.text).toBe(200);
  expect(Object.keys(response.body).sort()).toEqual(['items', 'metadata']);
  const ids = (response.body.items as { id: string }[]).map((item) => item.id);
  return { ids, nextCursor: response.body.metadata.nextCursor, response };
}

/** Every page from `cursor` (or the start) to the end, with their sizes. */
async function pageToEnd(
  stack: TestStack,
  tenant: TestTenant,
  accountId: string,
  limit: number,
  cursor?: string,
): Promise<{ ids: string[]; sizes: number[] }> {
  const ids: string[] = [];
  const sizes: number[] = [];
  let next: string | null | undefined = cursor;
  do {
    const query = new URLSearchParams({ limit: String(limit) });
    if (next) query.set('cursor', next);
    const page = await getPage(stack, tenant, accountId, query.toString());
    ids.push(...page.ids);
    sizes.push(page.ids.length);
    next = page.nextCursor;
    expect(sizes.length).toBeLessThan(10_000);
  } while (next);
  return { ids, sizes };
}

function cursorQuery(cursor: string, extra = ''): string {
  return `cursor=${encodeURIComponent(cursor)}${extra}`;
}

describe('paging shipments (spec rules 1-5, API.md "Pagination")', () => {
  const SEEDED = 120;
  let stack: TestStack;
  let tenant: TestTenant;
  let otherTenant: TestTenant;
  let accountId: string;
  /** Ids of the main account in the order they were created, one after the other. */
  let created: string[];

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack, { accounts: 4 });
    otherTenant = await createTenant(stack);
    accountId = tenant.accountIds[0]!;
    created = [];
    for (let i = 0; i < SEEDED; i++) created.push((await createShipment(stack, tenant, { name: `Seed ${i}` })).id);
    await createShipments(stack, tenant, 14, { account: 1, concurrency: 4 });
    await createShipments(stack, otherTenant, 3);
  });
  afterAll(() => stack?.stop());

  const page = (query = '', account = accountId) => getPage(stack, tenant, account, query);
  const invalid = (query: string, account = accountId) =>
    stack.request('GET', `/v1/accounts/${account}/shipments?${query}`, { token: tenant.token });

  it('rule 1: without a cursor, returns the first page; default limit 50; no total unless asked', async () => {
    const first = await page();
    expect(first.ids).toEqual(created.slice(0, 50));
    expect(typeof first.nextCursor).toBe('string');
    expect(first.nextCursor!.length).toBeGreaterThan(0);
    expect(Object.keys(first.response.body.metadata)).toEqual(['nextCursor']);
  });

  it('rule 2: each cursor returns the batch that starts right after the previous page', async () => {
    const first = await page('limit=7');
    expect(first.ids).toEqual(created.slice(0, 7));
    const second = await page(cursorQuery(first.nextCursor!, '&limit=7'));
    expect(second.ids).toEqual(created.slice(7, 14));
    // A cursor is a position, not a one-time token: it gives the same batch again, and the
    // limit may change from one page to the next.
    expect((await page(cursorQuery(first.nextCursor!, '&limit=7'))).ids).toEqual(second.ids);
    expect((await page(cursorQuery(first.nextCursor!, '&limit=3'))).ids).toEqual(created.slice(7, 10));
  });

  it.each([1, 7, 50, 100])('rules 2 and 4: with limit=%i, pages through everything in creation order, oldest first', async (limit) => {
    const { ids, sizes } = await pageToEnd(stack, tenant, accountId, limit);
    expect(ids).toEqual(created);
    const expectedSizes = Array.from({ length: Math.ceil(SEEDED / limit) }, (_, i) => Math.min(limit, SEEDED - i * limit));
    expect(sizes).toEqual(expectedSizes);
  });

  it('rule 4: the last page has nextCursor null, also when it is exactly full', async () => {
    const last = await page('limit=100');
    const rest = await page(cursorQuery(last.nextCursor!, '&limit=100'));
    expect(rest.ids).toEqual(created.slice(100));
    expect(rest.response.body.metadata).toEqual({ nextCursor: null });

    const exactAccount = tenant.accountIds[1]!;
    const firstOf14 = await page('limit=7', exactAccount);
    expect(firstOf14.ids).toHaveLength(7);
    const secondOf14 = await page(cursorQuery(firstOf14.nextCursor!, '&limit=7'), exactAccount);
    expect(secondOf14.ids).toHaveLength(7);
    expect(secondOf14.nextCursor).toBeNull();
  });

  it('an empty collection is one empty last page', async () => {
    const empty = await page('includeTotal=true', tenant.accountIds[2]!);
    expect(empty.response.body).toEqual({ items: [], metadata: { nextCursor: null, total: 0 } });
  });

  it('creation order: oldest first by createdAt', async () => {
    const all = await page('limit=100');
    const createdAt = (all.response.body.items as { createdAt: string }[]).map((item) => Date.parse(item.createdAt));
    expect(createdAt).toEqual([...createdAt].sort((a, b) => a - b));
  });

  it('pages asked for at once, of other accounts, tenants, positions and limits, are each their own', async () => {
    // The OMS answers the pages of one turn with one statement (batchedRows): none may get another's rows.
    const second = await page('limit=30');
    const asks: [TestTenant, string, string][] = [];
    for (let i = 0; i < 4; i++) {
      asks.push([tenant, accountId, `limit=${10 + i}`], [tenant, accountId, cursorQuery(second.nextCursor!, `&limit=${20 + i}`)]);
      asks.push([tenant, tenant.accountIds[1]!, `limit=${5 + i}`], [tenant, tenant.accountIds[2]!, ''], [tenant, accountId, 'status=Planned']);
      asks.push([otherTenant, otherTenant.accountIds[0]!, `limit=${1 + i}`], [tenant, accountId, 'includeTotal=true&limit=3']);
    }
    const expected: unknown[] = [];
    for (const [who, account, query] of asks) expected.push((await getPage(stack, who, account, query)).response.body);
    for (let round = 0; round < 3; round++) {
      const pages = await Promise.all(asks.map(([who, account, query]) => getPage(stack, who, account, query)));
      expect(pages.map((each) => each.response.body)).toEqual(expected);
    }
  });

  it('includeTotal=true adds metadata.total on every page; false or absent leaves it out', async () => {
    const first = await page('includeTotal=true&limit=10');
    expect(first.response.body.metadata).toEqual({ nextCursor: expect.any(String), total: SEEDED });
    const later = await page(cursorQuery(first.nextCursor!, '&includeTotal=true&limit=10'));
    expect(later.response.body.metadata.total).toBe(SEEDED);
    expect(later.ids).toEqual(created.slice(10, 20));
    expect((await page('includeTotal=false')).response.body.metadata).not.toHaveProperty('total');
    expect((await page(cursorQuery(first.nextCursor!))).response.body.metadata).not.toHaveProperty('total');
    expect((await page('includeTotal=true', tenant.accountIds[1]!)).response.body.metadata.total).toBe(14);
  });

  it.each([
    ['0', 'OutOfRange'],
    ['101', 'OutOfRange'],
    ['-1', 'OutOfRange'],
    ['abc', 'InvalidFormat'],
    ['1e3', 'InvalidFormat'],
    ['1.5', 'InvalidFormat'],
    ['', 'InvalidFormat'],
  ])('limit=%s -> 400 %s', async (limit, issue) => {
    expectInvalidParameter(await invalid(`limit=${limit}`), 'limit', issue);
  });

  it('a parameter given twice -> 400', async () => {
    expectInvalidParameter(await invalid('limit=5&limit=6'), 'limit', 'InvalidFormat');
    expectInvalidParameter(await invalid('limit=5&limit=5'), 'limit', 'InvalidFormat');
    const first = await page('limit=2');
    const cursor = encodeURIComponent(first.nextCursor!);
    expectInvalidParameter(await invalid(`cursor=${cursor}&cursor=${cursor}`), 'cursor', 'InvalidFormat');
  });

  it.each(['yes', 'TRUE', '1', ''])('includeTotal=%s -> 400 InvalidFormat', async (value) => {
    expectInvalidParameter(await invalid(`includeTotal=${value}`), 'includeTotal', 'InvalidFormat');
  });

  it.each(['foo=1', 'offset=10', 'page=2', 'Limit=5', 'sort=name&limit=5', 'Status=Planned'])('unknown parameter (%s) -> 400 UnknownField', async (query) => {
    const name = query.split('=')[0]!;
    expectInvalidParameter(await invalid(query), name, 'UnknownField');
  });

  describe('rule 5 and API.md: the cursor is opaque, signed and bound to its collection', () => {
    let cursor: string;
    beforeAll(async () => {
      cursor = (await page('limit=5')).nextCursor!;
    });

    it('is a URL-safe string that does not show the position', async () => {
      expect(cursor).toMatch(/^[A-Za-z0-9._~-]+$/);
      expect(cursor).not.toContain(created[4]!);
    });

    it('any changed character -> 400 InvalidCursor', async () => {
      const replacements = ['A', 'z', '0', '-', '_'];
      for (let index = 0; index < cursor.length; index++) {
        const original = cursor[index]!;
        const replacement = replacements.find((candidate) => candidate !== original && candidate !== '.')!;
        if (original === '.') continue;
        const tampered = cursor.slice(0, index) + replacement + cursor.slice(index + 1);
        expectInvalidParameter(await invalid(cursorQuery(tampered)), 'cursor', 'InvalidCursor');
      }
    });

    it('truncated, extended or re-cased -> 400 InvalidCursor', async () => {
      for (const tampered of [cursor.slice(0, -1), cursor.slice(1), `${cursor}A`, `${cursor}.x`, cursor.toUpperCase(), cursor.toLowerCase()]) {
        if (tampered === cursor) continue;
        expectInvalidParameter(await invalid(cursorQuery(tampered)), 'cursor', 'InvalidCursor');
      }
    });

    it('from another account of the same tenant -> 400 InvalidCursor', async () => {
      const fromOtherAccount = (await page('limit=2', tenant.accountIds[1]!)).nextCursor!;
      expectInvalidParameter(await invalid(cursorQuery(fromOtherAccount)), 'cursor', 'InvalidCursor');
      expectInvalidParameter(await invalid(cursorQuery(cursor), tenant.accountIds[1]!), 'cursor', 'InvalidCursor');
    });

    it('from another tenant -> 400 InvalidCursor', async () => {
      const foreign = await getPage(stack, otherTenant, otherTenant.accountIds[0]!, 'limit=1');
      expectInvalidParameter(await invalid(cursorQuery(foreign.nextCursor!)), 'cursor', 'InvalidCursor');
    });

    describe('signed with the right secret (a leaked or default one) but naming no position a page can have', () => {
      const forge = (collection: string, scope: Record<string, string>, position: string) =>
        new CursorCodec(stack.env.CURSOR_SECRET!).encode(cursorBinding(collection, scope), position);
      const BEYOND_BIGINT = ['9223372036854775808', '9999999999999999999', '-1', '1.5', '1e3', '01'];

      it('the control: a forged cursor inside the range is taken, for every kind of collection', async () => {
        const forged = forge('shipments', { accountId }, '9223372036854775807');
        const response = await invalid(cursorQuery(forged));
        expect({ status: response.status, body: response.body }).toEqual({ status: 200, body: { items: [], metadata: { nextCursor: null } } });
      });

      it.each(BEYOND_BIGINT)('position %s -> 400 InvalidCursor on shipments, points of interest and devices, never a 500', async (position) => {
        const scopes: [string, string, Record<string, string>][] = [
          ['shipments', 'shipments', { accountId }],
          ['points-of-interest', 'points-of-interest', { accountId }],
          ['devices', 'devices', { accountId }],
        ];
        for (const [route, collection, scope] of scopes) {
          const response = await stack.request('GET', `/v1/accounts/${accountId}/${route}?${cursorQuery(forge(collection, scope, position))}`, {
            token: tenant.token,
          });
          expectInvalidParameter(response, 'cursor', 'InvalidCursor');
        }
      });

      it("the results of an operation, whose index is an integer column: beyond 2^63-1 400, beyond 2^31-1 an empty page", async () => {
        const created = await stack.request('POST', `/v1/accounts/${accountId}/devices/bulk-retire`, {
          token: tenant.token,
          body: { deviceIds: [randomUUID()] },
        });
        expect(created.status, created.text).toBe(202);
        const operationId = created.body.id as string;
        const results = (position: string) =>
          stack.request('GET', `/v1/accounts/${accountId}/operations/${operationId}/results?${cursorQuery(forge('operation-results', { operationId }, position))}`, {
            token: tenant.token,
          });
        expectInvalidParameter(await results('9223372036854775808'), 'cursor', 'InvalidCursor');
        const beyondInteger = await results('2147483648');
        expect({ status: beyondInteger.status, body: beyondInteger.body }).toEqual({ status: 200, body: { items: [], metadata: { nextCursor: null } } });
      });
    });

    it.each(['abc', 'abc.def', 'MTIz.AAAAAAAAAAAAAAAAAAAAAA', '.', '1', '{"seq":5}', 'x'.repeat(600), ''])(
      'a made-up cursor (%s) -> 400 InvalidCursor',
      async (madeUp) => {
        expectInvalidParameter(await invalid(cursorQuery(madeUp)), 'cursor', 'InvalidCursor');
      },
    );
  });

  describe('rule 3 with one writer at a time', () => {
    it('a record changed while paging keeps its place and is seen once', async () => {
      const account = tenant.accountIds[1]!;
      const before = (await pageToEnd(stack, tenant, account, 100)).ids;
      const first = await page('limit=5', account);
      // Change one record already paged past and one still ahead.
      for (const id of [first.ids[0]!, before[10]!]) {
        const changed = await stack.request('PATCH', `/v1/accounts/${account}/shipments/${id}`, {
          token: tenant.token,
          body: { name: `Changed ${id}` },
        });
        expect(changed.status).toBe(200);
      }
      const rest = await pageToEnd(stack, tenant, account, 5, first.nextCursor!);
      expect([...first.ids, ...rest.ids]).toEqual(before);
    });

    it('a record created while paging appears once, on a later page', async () => {
      const account = tenant.accountIds[3]!;
      const existing = (await createShipments(stack, tenant, 6, { account: 3 })).map((shipment) => shipment.id);
      const first = await page('limit=4', account);
      expect(first.ids).toEqual(existing.slice(0, 4));
      const added = (await createShipments(stack, tenant, 3, { account: 3 })).map((shipment) => shipment.id);
      const rest = await pageToEnd(stack, tenant, account, 4, first.nextCursor!);
      expect([...first.ids, ...rest.ids]).toEqual([...existing, ...added]);
    });
  });
});

/** Resolves once `count` of `promises` have fulfilled (at once for a count of 0); rejects on the first failure. */
function fulfilled(promises: Promise<unknown>[], count: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = 0;
    if (count <= 0) resolve();
    for (const promise of promises) {
      promise.then(() => {
        if (++done === count) resolve();
      }, reject);
    }
  });
}

/**
 * Rule 3 under load, as docs/api.md ("Paging") states it: two OMS replicas, clients creating and changing
 * shipments while another client pages with limit 7.
 *
 * A skip needs a page read while a shipment is still uncommitted and at least two shipments
 * created after it have committed. With everything in one process such overtaking is rare, so
 * the first creation of every wave commits late: a trigger in this file's own database holds its
 * transaction open for a moment after the row is inserted, as a slow disk or a paused replica
 * would. Without the insert-order lock, the rest of the wave commits past it; with the lock,
 * the rest of the wave waits for it.
 *
 * Left to run freely, writers either outrun a pager (it never ends) or fall behind it (it meets
 * them for a page or two), so the test paces them with promises: before each page a wave of
 * concurrent creations starts, the page is read when half of the wave has answered and the other
 * half is still in flight, and the wave's size keeps the pager a few rows behind the newest
 * shipment for many pages. Then the waves shrink, the pager reaches the end while creations still
 * run, and the writers stop.
 */
describe('paging while other clients write, on two OMS replicas', () => {
  const SEEDED = 150;
  const PAGE_LIMIT = 7;
  /** Unread committed rows the pager should have at the start of a round while it follows the newest. */
  const TARGET_LAG = 4;
  const MIN_WAVE = 2;
  const MAX_WAVE = 12;
  /** Rounds the pager spends right behind the newest rows before the waves shrink. */
  const FOLLOW_ROUNDS = 30;
  const UPDATERS = 3;
  /** Marks a creation whose transaction the trigger keeps open for `LATE_COMMIT_SECONDS`. */
  const LATE_COMMIT = '(late commit)';
  const LATE_COMMIT_SECONDS = 0.03;
  /** Passes of the whole scenario, each on a fresh account and checked on its own. */
  const PASSES = 2;
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start({ omsReplicas: 2 });
    tenant = await createTenant(stack, { accounts: PASSES });
    await stack.oms[0]!.get(DataSource).query(`
      CREATE FUNCTION test_late_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_sleep(${LATE_COMMIT_SECONDS});
        RETURN NULL;
      END $$;
      CREATE TRIGGER test_late_commit AFTER INSERT ON shipments
        FOR EACH ROW WHEN (strpos(NEW.name, '${LATE_COMMIT}') > 0) EXECUTE FUNCTION test_late_commit();
    `);
  });
  afterAll(() => stack?.stop());

  it('never repeats or skips a shipment that existed or was created while paging', { timeout: 180_000 }, async () => {
    const servedBy = stack.oms.map((replica) => {
      const counts = { create: 0, update: 0, list: 0 };
      const service = replica.get(ShipmentsService);
      for (const method of ['create', 'update', 'list'] as const) {
        const original = service[method].bind(service) as (request: never) => Promise<unknown>;
        (service as unknown as Record<string, unknown>)[method] = (request: never) => {
          counts[method]++;
          return original(request);
        };
      }
      return counts;
    });
    let updates = 0;
    let lateCommits = 0;

    for (let pass = 0; pass < PASSES; pass++) {
      const accountId = tenant.accountIds[pass]!;
      const path = `/v1/accounts/${accountId}/shipments`;
      const seeded = await createShipments(stack, tenant, SEEDED, { account: pass, concurrency: 8 });
      /** Ids whose creation has completed (201 received), in completion order. */
      const completed: string[] = seeded.map((shipment) => shipment.id);
      const existedBefore = new Set(completed);
      let writing = true;

      const create = async (late: boolean): Promise<void> => {
        if (late) lateCommits++;
        const name = `Concurrent ${pass}${late ? ` ${LATE_COMMIT}` : ''}`;
        const response = await stack.request('POST', path, { token: tenant.token, body: { name } });
        expect(response.status, response.text).toBe(201);
        completed.push(response.body.id);
      };
      const updater = async (): Promise<void> => {
        while (writing) {
          const id = completed[Math.floor(Math.random() * completed.length)]!;
          const response = await stack.request('PATCH', `${path}/${id}`, {
            token: tenant.token,
            body: { name: `Changed in pass ${pass}` },
          });
          expect(response.status, response.text).toBe(200);
          updates++;
        }
      };
      const updaters = Array.from({ length: UPDATERS }, updater);

      const pages: string[][] = [];
      let read = 0;
      let cursor: string | undefined;
      let lastCursor: string | undefined;
      let followed = 0;
      try {
        for (;;) {
          const lag = completed.length - read;
          const following = lag <= TARGET_LAG + PAGE_LIMIT;
          if (following) followed++;
          // The page takes PAGE_LIMIT rows; a wave of this size brings the lag back to TARGET_LAG + 1.
          const size =
            followed > FOLLOW_ROUNDS ? MIN_WAVE : Math.min(MAX_WAVE, Math.max(MIN_WAVE, TARGET_LAG + PAGE_LIMIT + 1 - lag));
          // Far behind the newest rows a late commit cannot be paged past; it would only cost time.
          const wave = Array.from({ length: size }, (_, index) => create(following && index === 0));
          await fulfilled(wave, Math.ceil(size / 2));
          const query = new URLSearchParams({ limit: String(PAGE_LIMIT) });
          if (cursor) query.set('cursor', cursor);
          const current = await getPage(stack, tenant, accountId, query.toString());
          pages.push(current.ids);
          read += current.ids.length;
          await Promise.all(wave);
          if (!current.nextCursor) break;
          lastCursor = cursor = current.nextCursor;
        }
      } finally {
        // The pager has reached the end while shipments were still being created: stop the writers.
        writing = false;
        await Promise.all(updaters);
      }
      const createdBeforeFinalRead = completed.filter((id) => !existedBefore.has(id));

      // Once more from the last cursor, now that nobody writes: the rest of the collection.
      const lastPage = pages.at(-1)!;
      const rest = await pageToEnd(stack, tenant, accountId, PAGE_LIMIT, lastCursor);
      const seen = [...pages.slice(0, -1).flat(), ...rest.ids];
      const counts = new Map<string, number>();
      for (const id of seen) counts.set(id, (counts.get(id) ?? 0) + 1);

      const repeated = [...counts].filter(([, count]) => count > 1).map(([id]) => id);
      expect(repeated, `pass ${pass}: shipments seen more than once`).toEqual([]);
      const missedExisting = [...existedBefore].filter((id) => !counts.has(id));
      expect(missedExisting, `pass ${pass}: shipments that existed before paging but were skipped`).toEqual([]);
      const missedCreated = createdBeforeFinalRead.filter((id) => !counts.has(id));
      expect(missedCreated, `pass ${pass}: shipments created while paging but skipped`).toEqual([]);
      expect(seen).toHaveLength(existedBefore.size + createdBeforeFinalRead.length);
      // Rule 2: the last page read under load is still the start of what follows its cursor.
      expect(rest.ids.slice(0, lastPage.length)).toEqual(lastPage);

      // The scenario really happened: the pager followed the newest rows for the planned rounds.
      expect(followed).toBeGreaterThan(FOLLOW_ROUNDS);
      const seenWhilePaging = new Set(pages.flat());
      expect(createdBeforeFinalRead.filter((id) => seenWhilePaging.has(id)).length).toBeGreaterThan(FOLLOW_ROUNDS);

      // And the order is still creation order: a fresh pass from the start gives the same sequence.
      expect((await pageToEnd(stack, tenant, accountId, 100)).ids).toEqual(seen);
    }

    expect(updates).toBeGreaterThan(0);
    expect(lateCommits).toBeGreaterThan(FOLLOW_ROUNDS * PASSES);
    for (const counts of servedBy) {
      expect(counts.create).toBeGreaterThan(0);
      expect(counts.update).toBeGreaterThan(0);
      expect(counts.list).toBeGreaterThan(0);
    }
  });
});
