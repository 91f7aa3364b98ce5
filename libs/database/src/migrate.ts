import type { DataSource } from 'typeorm';

/**
 * Runs pending migrations while holding a session-level advisory lock, so that replicas starting
 * together apply each migration exactly once and the others wait for it.
 */
export async function runMigrationsLocked(dataSource: DataSource, lockName: string): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock(hashtext($1))', [`migrations:${lockName}`]);
    try {
      const applied = await dataSource.runMigrations({ transaction: 'each' });
      return applied.map((migration) => migration.name);
    } finally {
      await runner.query('SELECT pg_advisory_unlock(hashtext($1))', [`migrations:${lockName}`]);
    }
  } finally {
    await runner.release();
  }
}
