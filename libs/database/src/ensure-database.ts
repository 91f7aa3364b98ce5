import pg from 'pg';
import { isPgError } from './pg-errors.js';

/** Creates the database named in `url` when it does not exist yet; safe when replicas race. */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) throw new Error('The database URL names no database');
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const client = new pg.Client({ connectionString: maintenance.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return;
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
    } catch (error) {
      // 42P04 duplicate_database, 23505 unique_violation: another replica created it first.
      if (!isPgError(error, '42P04') && !isPgError(error, '23505')) throw error;
    }
  } finally {
    await client.end();
  }
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
