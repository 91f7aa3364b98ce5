import { createHash } from 'node:crypto';
import type { DataSource } from 'typeorm';

/** What node-postgres' pool (TypeORM's PostgreSQL driver keeps it as `master`) offers for one query. */
interface PgPool {
  query(config: { name: string; text: string; values: unknown[]; rowMode?: 'array' }): Promise<{ rows: unknown[] }>;
}

const names = new Map<string, string>();

/** A prepared statement's name derived from its text: the same text is prepared once per connection. */
function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `tracking_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    names.set(text, name);
  }
  return name;
}

/**
 * Runs `text` as a named prepared statement on the data source's pool and returns its rows as arrays of
 * the driver's values, for the hottest reads: PostgreSQL parses and plans the statement once per
 * connection instead of on every call (as TypeORM's `query` makes it do), and no row objects are built.
 * Speed machinery (docs/architecture.md): the simple version is TypeORM's `query` or `findOneBy`.
 * The caller keeps `text` to a bounded set of texts (placeholders, never inlined values) and names its
 * columns: PostgreSQL re-plans a prepared statement after a migration by itself, and only a change of the
 * type of a selected column (which a rolling update must not make anyway) would fail it.
 */
export async function preparedRows<Row extends unknown[]>(dataSource: DataSource, text: string, values: unknown[]): Promise<Row[]> {
  const result = await poolOf(dataSource).query({ name: statementName(text), text, values, rowMode: 'array' });
  return result.rows as Row[];
}

/**
 * `preparedRows` with each row as an object keyed by its column names (as TypeORM's `query` gives them),
 * for a hot read of many columns that would otherwise be read by position.
 */
export async function preparedRecords<Row extends object>(dataSource: DataSource, text: string, values: unknown[]): Promise<Row[]> {
  const result = await poolOf(dataSource).query({ name: statementName(text), text, values });
  return result.rows as Row[];
}

function poolOf(dataSource: DataSource): PgPool {
  const pool = (dataSource.driver as unknown as { master?: PgPool }).master;
  if (!pool) throw new Error('preparedRows needs a PostgreSQL data source that is initialized');
  return pool;
}
