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

export interface KeysetJsonQuery {
  dataSource: DataSource;
  table: string;
  /**
   * The column holding each row's item as the API shows it, as JSON text (`api_json`, which a trigger
   * keeps up to date on every write).
   */
  jsonColumn: string;
  /** Every filter, scope included; `binding` must describe the same filters. */
  where: SqlConditions;
  page: PageRequest;
  codec: CursorCodec;
  binding: string;
  /** The page's key of the items (`items`, `devices`). */
  itemsKey: string;
}

/**
 * One page, as JSON text, of `table` in ascending `seq` order after the position in `page.cursor`, for
 * the hottest reads: a statement prepared once per connection that selects each row's stored JSON,
 * strung together as it is (no entity, no object, no `JSON.stringify` of one). Fetches one row more than
 * the limit to know whether a next page exists, as `keysetPage` does.
 */
export async function keysetJsonPage(query: KeysetJsonQuery): Promise<string> {
  const { dataSource, table, jsonColumn, where, page, codec, binding } = query;
  // The cursor is checked before any query starts, so that a refused cursor leaves none running.
  const paged = page.cursor === undefined ? where : where.and((p) => `seq > ${p}`, codec.decode(binding, page.cursor));
  // Both queries at once, awaited together: a failing count never goes unobserved.
  const [rows, total] = await Promise.all([
    preparedRows<[seq: string, json: string]>(
      dataSource,
      `SELECT seq, ${jsonColumn} FROM ${table} WHERE ${paged.sql} ORDER BY seq LIMIT $${paged.params.length + 1}`,
      [...paged.params, page.limit + 1],
    ),
    page.includeTotal ? preparedRows<[number]>(dataSource, `SELECT count(*)::int FROM ${table} WHERE ${where.sql}`, where.params) : undefined,
  ]);
  const hasMore = rows.length > page.limit;
  if (hasMore) rows.length = page.limit;
  const last = rows.at(-1);
  const metadata: PageMetadata = { nextCursor: hasMore && last ? codec.encode(binding, last[0]) : null };
  if (total !== undefined) metadata.total = total[0]?.[0] ?? 0;
  return `{"${query.itemsKey}":[${rows.map((row) => row[1]).join(',')}],"metadata":${JSON.stringify(metadata)}}`;
}
