import type { PageMetadata, PageRequest } from '@tracking/contracts';
import { batchableTypes, batchedRows, preparedRows } from '@tracking/database';
import type { DataSource } from 'typeorm';
import type { CursorCodec } from './cursor-codec.js';

/**
 * The WHERE conditions of a hand-written query and their parameters, numbered as they are added, each
 * with its PostgreSQL type (`uuid`, `text`, `text[]`...), so that a query of scalar parameters only can be
 * batched with others of its kind (`batchedRows`). The types exist only for that batching (speed
 * machinery, docs/architecture.md); without it the conditions would need no types.
 */
export class SqlConditions {
  readonly conditions: string[] = [];
  readonly params: unknown[] = [];
  readonly types: string[] = [];

  /** Adds `condition`, given the placeholder (`$n`) of `value`, whose type is `type`. */
  add(condition: (placeholder: string) => string, value: unknown, type: string): this {
    this.params.push(value);
    this.types.push(type);
    this.conditions.push(condition(`$${this.params.length}`));
    return this;
  }

  /** A copy with one condition more; this one stays as it is. */
  and(condition: (placeholder: string) => string, value: unknown, type: string): SqlConditions {
    const copy = new SqlConditions();
    copy.conditions.push(...this.conditions);
    copy.params.push(...this.params);
    copy.types.push(...this.types);
    return copy.add(condition, value, type);
  }

  get sql(): string {
    return this.conditions.join(' AND ');
  }

  /** Whether every parameter is of a type `batchedRows` takes (a scalar, no array). */
  get batchable(): boolean {
    return batchableTypes(this.types);
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
  /** Every filter, scope included, but `oneOf`; `binding` must describe the same filters. */
  where: SqlConditions;
  /**
   * A filter that takes a list (`status` in any of these): a row matches when `column` equals one of
   * `values`, whose PostgreSQL type is `type` (scalar). See `keysetJsonPage` for how it is read.
   */
  oneOf?: { column: string; values: readonly unknown[]; type: string };
  page: PageRequest;
  codec: CursorCodec;
  binding: string;
  /** The page's key of the items (`items`, `devices`). */
  itemsKey: string;
}

/** The most values of a `oneOf` filter read as one branch each; a longer list is a plain filter. */
export const MAX_ONE_OF_BRANCHES = 8;

/**
 * A page's `seq` as PostgreSQL's text of it, under a name of its own (a cast named `seq` would be what
 * `ORDER BY seq` sorts, as text). The cursor needs only the text, and pg's parser for a bigint column
 * tests every value against a regular expression before it hands back the same text: 2 to 3 % of the OMS's
 * and the DMS's busy time under list shipments and list devices (`npm run bench:profile`, 2026-11-28).
 */
const SEQ_TEXT = 'seq::text AS page_seq';

/**
 * One page, as the bytes of its JSON text, of `table` in ascending `seq` order after the position in `page.cursor`, for
 * the hottest reads: a statement prepared once per connection that selects each row's stored JSON,
 * strung together as it is (no entity, no object, no `JSON.stringify` of one). Fetches one row more than
 * the limit to know whether a next page exists, as `keysetPage` does. Pages of the same shape asked for
 * in the same turn share one statement (`batchedRows`).
 *
 * The statement is shaped so that an index on the equality columns of `where` followed by `seq` is its
 * only sensible plan, statistics or none: equalities and `seq > $n` only, `ORDER BY seq LIMIT $n`. A
 * `oneOf` list of one value is one equality more; a list of several is one such branch per value,
 * `UNION ALL`ed and merged in `seq` order (each branch ordered by an index on `(..., column, seq)` and
 * limited, so a page reads at most its own rows and one per branch more), where `column = ANY(list)`
 * would leave PostgreSQL only a filter or a sort of every matching row.
 *
 * Speed machinery (docs/architecture.md, "Speed machinery"): the simple version is `keysetPage` on the
 * entities, mapped with `toShipment` / `toDevice` and encoded by the caller.
 */
export async function keysetJsonPage(query: KeysetJsonQuery): Promise<Buffer> {
  const { dataSource, table, jsonColumn, where, page, codec, binding, oneOf } = query;
  // The cursor is checked before any query starts, so that a refused cursor leaves none running.
  const after = page.cursor === undefined ? undefined : codec.decode(binding, page.cursor);
  const values = oneOf && [...new Set(oneOf.values)];
  const branched = oneOf !== undefined && values !== undefined && values.length > 1 && values.length <= MAX_ONE_OF_BRANCHES;
  let filtered = where;
  if (oneOf && values && !branched) {
    filtered =
      values.length === 1
        ? where.and((p) => `${oneOf.column} = ${p}`, values[0], oneOf.type)
        : where.and((p) => `${oneOf.column} = ANY(${p})`, values, `${oneOf.type}[]`);
  }
  const paged = after === undefined ? filtered : filtered.and((p) => `seq > ${p}`, after, 'bigint');
  const placeholder = (n: number) => `$${paged.params.length + n}`;
  let text: string;
  let params: unknown[];
  let types: string[];
  if (branched && oneOf && values) {
    // One branch per value ($n+1...), all limited by the same $ (the last parameter).
    const limit = placeholder(values.length + 1);
    const selects = values.map(
      (_, index) => `(SELECT seq, ${jsonColumn} FROM ${table} WHERE ${paged.sql} AND ${oneOf.column} = ${placeholder(index + 1)} ORDER BY seq LIMIT ${limit})`,
    );
    text = `SELECT ${SEQ_TEXT}, ${jsonColumn} FROM (${selects.join(' UNION ALL ')}) AS _branches ORDER BY seq LIMIT ${limit}`;
    params = [...paged.params, ...values, page.limit + 1];
    types = [...paged.types, ...values.map(() => oneOf.type), 'integer'];
  } else {
    text = `SELECT ${SEQ_TEXT}, ${jsonColumn} FROM ${table} WHERE ${paged.sql} ORDER BY seq LIMIT ${placeholder(1)}`;
    params = [...paged.params, page.limit + 1];
    types = [...paged.types, 'integer'];
  }
  const counted = branched && oneOf ? where.and((p) => `${oneOf.column} = ANY(${p})`, values, `${oneOf.type}[]`) : filtered;
  // Both queries at once, awaited together: a failing count never goes unobserved.
  const [rows, total] = await Promise.all([
    batchableTypes(types)
      ? batchedRows<[seq: string, json: string]>(dataSource, text, types, params).then(inSeqOrder)
      : preparedRows<[seq: string, json: string]>(dataSource, text, params),
    page.includeTotal ? preparedRows<[number]>(dataSource, `SELECT count(*)::int FROM ${table} WHERE ${counted.sql}`, counted.params) : undefined,
  ]);
  const hasMore = rows.length > page.limit;
  if (hasMore) rows.length = page.limit;
  const last = rows.at(-1);
  const metadata: PageMetadata = { nextCursor: hasMore && last ? codec.encode(binding, last[0]) : null };
  if (total !== undefined) metadata.total = total[0]?.[0] ?? 0;
  return jsonPageBytes(query.itemsKey, rows.map((row) => row[1]), metadata);
}

/**
 * `{"<itemsKey>":[item,...],"metadata":{...}}` as UTF-8 bytes, each item's JSON text written once into
 * one buffer that the NATS client sends as it is. Speed machinery: the simple version is the string
 * `{"items":[${items.join(',')}],...}`, which costs a 30 KiB page three copies on the service's young
 * heap (the joined items, the flattened whole that the client's `TextEncoder` reads, and its bytes) for
 * the one here, off the heap: under list shipments the OMS spent 26 % of its busy time collecting garbage
 * and 7 % encoding replies (`npm run bench:profile`, docs/architecture.md "Speed machinery").
 */
export function jsonPageBytes(itemsKey: string, items: readonly string[], metadata: PageMetadata): Buffer {
  const head = `{"${itemsKey}":[`;
  const tail = `],"metadata":${JSON.stringify(metadata)}}`;
  let length = Buffer.byteLength(head) + Buffer.byteLength(tail) + Math.max(0, items.length - 1);
  for (const item of items) length += Buffer.byteLength(item);
  // Every byte is written below (the check at the end holds it), so nothing uninitialised leaves.
  const bytes = Buffer.allocUnsafe(length);
  let offset = bytes.write(head);
  items.forEach((item, index) => {
    if (index > 0) offset = bytes.writeUInt8(0x2c, offset); // ','
    offset += bytes.write(item, offset);
  });
  offset += bytes.write(tail, offset);
  if (offset !== length) throw new Error(`jsonPageBytes: wrote ${offset} of ${length} bytes`);
  return bytes;
}

/** `rows` sorted by `seq` (a bigint's decimal text), which a batched statement (`batchedRows`) does not promise. */
function inSeqOrder<Row extends [seq: string, ...rest: unknown[]]>(rows: Row[]): Row[] {
  const before = (a: Row, b: Row) => a[0].length < b[0].length || (a[0].length === b[0].length && a[0] < b[0]);
  const sorted = rows.every((row, index) => index === 0 || before(rows[index - 1] as Row, row));
  return sorted ? rows : rows.sort((a, b) => (before(a, b) ? -1 : 1));
}
