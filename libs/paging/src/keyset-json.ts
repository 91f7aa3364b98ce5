import type { PageMetadata, PageRequest } from '@tracking/contracts';
import { preparedRows } from '@tracking/database';
import type { DataSource } from 'typeorm';
import type { CursorCodec } from './cursor-codec.js';

/** The WHERE conditions of a hand-written query and their parameters, numbered as they are added. */
export class SqlConditions {
  readonly conditions: string[] = [];
  readonly params: unknown[] = [];

  /** Adds `condition`, given the placeholder (`$n`) of `value`. */
  add(condition: (placeholder: string) => string, value: unknown): this {
    this.params.push(value);
    this.conditions.push(condition(`$${this.params.length}`));
    return this;
  }

  /** A copy with one condition more; this one stays as it is. */
  and(condition: (placeholder: string) => string, value: unknown): SqlConditions {
    const copy = new SqlConditions();
    copy.conditions.push(...this.conditions);
    copy.params.push(...this.params);
    return copy.add(condition, value);
  }

  get sql(): string {
    return this.conditions.join(' AND ');
  }
}

export interface KeysetJsonQuery<Row extends [seq: string, ...columns: unknown[]]> {
  dataSource: DataSource;
  table: string;
  /** The columns after `seq` (which each row starts with), as `toJson` reads them. */
  columns: string;
  /** Every filter, scope included; `binding` must describe the same filters. */
  where: SqlConditions;
  page: PageRequest;
  codec: CursorCodec;
  binding: string;
  /** The page's key of the items (`items`, `devices`). */
  itemsKey: string;
  /** One row's item as JSON text. */
  toJson: (row: Row) => string;
}

/**
 * One page, as JSON text, of `table` in ascending `seq` order after the position in `page.cursor`, for
 * the hottest reads: a statement prepared once per connection whose rows are text that `toJson` strings
 * together (no entity, no object, no `JSON.stringify` of one). Fetches one row more than the limit to
 * know whether a next page exists, as `keysetPage` does.
 */
export async function keysetJsonPage<Row extends [seq: string, ...columns: unknown[]]>(query: KeysetJsonQuery<Row>): Promise<string> {
  const { dataSource, table, columns, where, page, codec, binding } = query;
  // The cursor is checked before any query starts, so that a refused cursor leaves none running.
  const paged = page.cursor === undefined ? where : where.and((p) => `seq > ${p}`, codec.decode(binding, page.cursor));
  // Both queries at once, awaited together: a failing count never goes unobserved.
  const [rows, total] = await Promise.all([
    preparedRows<Row>(
      dataSource,
      `SELECT seq, ${columns} FROM ${table} WHERE ${paged.sql} ORDER BY seq LIMIT $${paged.params.length + 1}`,
      [...paged.params, page.limit + 1],
    ),
    page.includeTotal ? preparedRows<[number]>(dataSource, `SELECT count(*)::int FROM ${table} WHERE ${where.sql}`, where.params) : undefined,
  ]);
  const hasMore = rows.length > page.limit;
  if (hasMore) rows.length = page.limit;
  const last = rows.at(-1);
  const metadata: PageMetadata = { nextCursor: hasMore && last ? codec.encode(binding, last[0]) : null };
  if (total !== undefined) metadata.total = total[0]?.[0] ?? 0;
  return `{"${query.itemsKey}":[${rows.map(query.toJson).join(',')}],"metadata":${JSON.stringify(metadata)}}`;
}
