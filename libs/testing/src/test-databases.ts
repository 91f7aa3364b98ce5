import pg from 'pg';
import { quoteIdent } from '@tracking/database';

const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Test databases older than this are left-overs of killed runs and are dropped at the next start. */
const STALE_AFTER_MS = 6 * 60 * 60 * 1000;

/** `postgres://.../<name>` on the test server. */
export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * A name unique to this test run, with its start time in it so that a later run can recognise and
 * drop the databases a killed run left behind: `trk_<epoch seconds>_<random>`.
 */
export function newRunId(): string {
  return `trk_${Math.floor(Date.now() / 1000)}_${Math.random().toString(36).slice(2, 8)}`;
}

/** Drops every database whose name starts with `prefix` (closing their connections first). */
export async function dropDatabases(prefix: string): Promise<void> {
  await withAdmin(async (client) => {
    // starts_with, not LIKE: `_` in our names is a LIKE wildcard.
    const { rows } = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [
      prefix,
    ]);
    for (const { datname } of rows) {
      await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(datname)} WITH (FORCE)`);
    }
  });
}

/** Drops test databases of runs that started more than six hours ago. */
export async function dropStaleTestDatabases(): Promise<void> {
  await withAdmin(async (client) => {
    const { rows } = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE starts_with(datname, 'trk_')");
    const cutoff = (Date.now() - STALE_AFTER_MS) / 1000;
    for (const { datname } of rows) {
      const started = Number(/^trk_(\d+)_/.exec(datname)?.[1]);
      if (Number.isFinite(started) && started < cutoff) {
        await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(datname)} WITH (FORCE)`);
      }
    }
  });
}

/**
 * Creates `name` as a copy of `template`. Copies are serialised through an advisory lock because
 * PostgreSQL refuses to copy a template that another session is copying at the same moment.
 */
export async function cloneDatabase(template: string, name: string): Promise<string> {
  await withAdmin(async (client) => {
    await client.query("SELECT pg_advisory_lock(hashtext('tracking-test-clone'))");
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(template)}`);
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtext('tracking-test-clone'))");
    }
  });
  return databaseUrl(name);
}
