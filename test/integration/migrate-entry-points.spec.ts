import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { databaseUrl, dropDatabases } from '@tracking/testing';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { dmsMigrations } from '../../apps/dms/src/migrations/index.js';
import { gatewayMigrations } from '../../apps/gateway/src/migrations/index.js';
import { omsMigrations } from '../../apps/oms/src/migrations/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Exit {
  code: number | null;
  stderr: string;
}

/**
 * Runs a compiled `migrate.js` with nothing but its database URL (and NODE_ENV=production, which makes
 * the services' secrets required): the Kubernetes migration Jobs give it no other variable.
 */
function migrate(service: string, variable: string, url: string): Promise<Exit> {
  const script = `apps/${service}/dist/migrate.js`;
  if (!existsSync(`${ROOT}/${script}`)) throw new Error(`${script} is missing: build first (npm test does)`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', LOG_LEVEL: 'silent', [variable]: url },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

async function appliedMigrations(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>('SELECT name FROM migrations ORDER BY id');
    return rows.map((row) => row.name);
  } finally {
    await client.end();
  }
}

/** The entry points of the migration Jobs (deploy/k8s/base/migrations.yaml). */
describe('migration entry points', () => {
  const prefix = `${inject('runId')}_migrate_${process.pid}_`;
  afterAll(() => dropDatabases(prefix));

  it.each([
    ['gateway', 'GATEWAY_DATABASE_URL', gatewayMigrations],
    ['oms', 'OMS_DATABASE_URL', omsMigrations],
    ['dms', 'DMS_DATABASE_URL', dmsMigrations],
  ])('%s: two runs at once create the database and apply each migration exactly once', async (service, variable, migrations) => {
    const url = databaseUrl(`${prefix}${service}`);
    const together = await Promise.all([migrate(service, variable, url), migrate(service, variable, url)]);
    expect(together).toEqual([
      { code: 0, stderr: '' },
      { code: 0, stderr: '' },
    ]);
    expect(await appliedMigrations(url)).toEqual(migrations.map((migration) => migration.name));
  });

  it('stops with a message naming a bad database URL', async () => {
    const exit = await migrate('oms', 'OMS_DATABASE_URL', 'mysql://127.0.0.1/x');
    expect(exit.code).toBe(1);
    expect(exit.stderr).toMatch(/Invalid configuration: OMS_DATABASE_URL/);
  });
});
