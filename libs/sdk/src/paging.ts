import type { CallOptions } from './transport.js';

/** One page of a collection: its records and `metadata` (`nextCursor`, and `total` when asked for). */
export interface Page<T> {
  records: T[];
  nextCursor: string | null;
  total?: number;
}

/** The paging parameters every collection takes; `cursor` resumes a listing where an earlier one stopped. */
export interface PageQuery {
  /** Records per request, 1..100 (default 50). */
  limit?: number;
  /** Ask for `metadata.total` (see `pages()`). */
  includeTotal?: boolean;
  cursor?: string;
}

type RawPage = Record<string, unknown> & { metadata?: { nextCursor?: string | null; total?: number } };

/**
 * A collection listing that fetches its pages as it is read: `for await (const record of listing)` goes
 * through every record, `for await (const page of listing.pages())` page by page. Nothing is requested
 * before iteration starts, and each iteration starts again from the first page (or the given cursor).
 */
export class Listing<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: (query: Record<string, unknown>, options: CallOptions) => Promise<RawPage>,
    private readonly key: string,
    private readonly query: Record<string, unknown>,
    private readonly options: CallOptions,
  ) {}

  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = this.query.cursor as string | undefined;
    for (;;) {
      const raw = await this.fetchPage({ ...this.query, cursor }, this.options);
      const records = (raw[this.key] ?? []) as T[];
      const nextCursor = raw.metadata?.nextCursor ?? null;
      yield { records, nextCursor: nextCursor || null, ...(raw.metadata?.total !== undefined ? { total: raw.metadata.total } : {}) };
      // The specification: paging ends when nextCursor is null, empty or missing.
      if (!nextCursor) return;
      cursor = nextCursor;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.records;
  }

  /** Every record, read to the end, in one array (for small collections). */
  async toArray(): Promise<T[]> {
    const all: T[] = [];
    for await (const record of this) all.push(record);
    return all;
  }
}
