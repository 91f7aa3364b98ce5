import type { EntityManager, ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import type { PageMetadata, PageRequest } from '@tracking/contracts';
import type { CursorCodec } from './cursor-codec.js';

export interface KeysetPage<T> {
  rows: T[];
  metadata: PageMetadata;
}

/**
 * One page of `query` in ascending order of `seqColumn` (a per-row `bigint` sequence), after the
 * position in `page.cursor`. Fetches one row more than the limit to know whether a next page exists.
 * The query must already carry every filter; `binding` must describe the same filters.
 */
export async function keysetPage<T extends ObjectLiteral>(
  query: SelectQueryBuilder<T>,
  options: { seqColumn: string; seqProperty: keyof T; page: PageRequest; codec: CursorCodec; binding: string },
): Promise<KeysetPage<T>> {
  const { seqColumn, seqProperty, page, codec, binding } = options;
  const paged = query.clone();
  // The cursor is checked before any query starts, so that a refused cursor leaves none running.
  if (page.cursor !== undefined) {
    // As bigint whatever the column's type: a position beyond an `integer` column's range (a forged cursor)
    // then finds no rows rather than failing the query. PostgreSQL compares integer with bigint on the index.
    paged.andWhere(`${seqColumn} > CAST(:afterSeq AS bigint)`, { afterSeq: codec.decode(binding, page.cursor) });
  }
  // Both queries at once, awaited together: a failing count never goes unobserved.
  const [rows, total] = await Promise.all([
    paged.orderBy(seqColumn, 'ASC').limit(page.limit + 1).getMany(),
    page.includeTotal ? query.clone().getCount() : undefined,
  ]);
  const hasMore = rows.length > page.limit;
  if (hasMore) rows.length = page.limit;
  const last = rows.at(-1);
  const metadata: PageMetadata = {
    nextCursor: hasMore && last ? codec.encode(binding, String(last[seqProperty])) : null,
  };
  if (total !== undefined) metadata.total = total;
  return { rows, metadata };
}

/**
 * Serialises inserts into one paging scope (for example an account's shipments) until the
 * transaction ends. A `bigserial` alone is not commit-ordered: a row with a smaller sequence could
 * commit after a reader has paged past it. Holding this lock while taking the sequence value makes
 * sequence order equal commit order within the scope, which is what keyset paging needs to neither
 * skip nor repeat rows written while a client pages (spec, pagination rule 3).
 */
export async function lockInsertOrder(manager: EntityManager, scope: string): Promise<void> {
  await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [scope]);
}
