import pg from 'pg';
import type { DataSource } from 'typeorm';

/**
 * Runs pending migrations while holding a session-level advisory lock, so that replicas starting
 * together apply each migration exactly once and the others wait for it. The lock lives on its own
 * connection, outside the pool, so a pool of one connection cannot deadlock on it.
 */
export async function runMigrationsLocked(dataSource: DataSource, url: string, lockName: string): Promise<string[]> {
  const lockClient = new pg.Client({ connectionString: url, application_name: `${lockName}-migrations` });
  await lockClient.connect();
  try {
    await lockClient.query('SELECT pg_advisory_lock(hashtext($1))', [`migrations:${lockName}`]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return applied.map((migration) => migration.name);
  } finally {
    // Ending the session releases the lock even if the unlock is never sent.
    await lockClient.end();
  }
}
