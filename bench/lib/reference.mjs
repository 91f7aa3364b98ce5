// The reference (bench/reference/server.mjs, this repository's yardstick) run on the same data as the
// stack: its database gets its own `shipment` and `device` tables filled with a copy of the benchmark
// account's rows (same ids, paging order and stored API JSON), so that the same calls
// (GET /v1/accounts/{our account}/shipments?limit=50, .../shipments/{id}, .../devices?limit=50) read the
// same rows and answer the same bytes.
import { spawn, execFileSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { DEVICE_COLUMNS, DEVICE_TYPES, SCHEMA_STATEMENTS, SHIPMENT_COLUMNS, SHIPMENT_TYPES } from '../reference/schema.mjs';
import { benchDir, resultsDir } from './config.mjs';
import { databaseNames, databaseUrl, freePort, resetDatabases } from './stack.mjs';

const referenceDir = join(benchDir, 'reference');
const COPY_BATCH = 10000;

/**
 * The reference's dependencies (fastify 5, jose 6, pg 8) are those of the root lockfile, so Node finds
 * them in the root node_modules; only if they are missing there is the reference's own lockfile installed.
 */
export function ensureReferenceDependencies() {
  const require = createRequire(join(referenceDir, 'package.json'));
  const missing = ['fastify', 'jose', 'pg'].filter((name) => {
    try {
      require.resolve(name);
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length === 0) return 'root node_modules';
  process.stdout.write(`  installing the reference's dependencies (${missing.join(', ')} missing)...\n`);
  execFileSync('npm', ['ci', '--prefix', referenceDir, '--no-audit', '--no-fund'], { stdio: 'inherit' });
  return 'bench/reference/node_modules';
}

/**
 * Recreates the reference database with the tables of server.mjs and a copy of the account's shipments
 * (from the OMS) and devices (from the DMS); returns the number of shipments copied.
 */
export async function prepareReferenceData(config, accountId) {
  const names = databaseNames(config);
  await resetDatabases(config, [names.reference]);
  const target = new pg.Client({ connectionString: databaseUrl(config, names.reference) });
  await target.connect();
  try {
    // The tables and indexes of server.mjs (bench/reference/schema.mjs; it skips them when they exist).
    for (const statement of SCHEMA_STATEMENTS) await target.query(statement);
    const shipments = await copyRows(databaseUrl(config, names.oms), target, 'shipments', 'shipment', SHIPMENT_COLUMNS, SHIPMENT_TYPES, accountId);
    await copyRows(databaseUrl(config, names.dms), target, 'devices', 'device', DEVICE_COLUMNS, DEVICE_TYPES, accountId);
    await target.query('ANALYZE');
    return shipments;
  } finally {
    await target.end();
  }
}

/** Copies the account's rows of `from` (in `sourceUrl`) into `to`, in `seq` order, batch by batch. */
async function copyRows(sourceUrl, target, from, to, columns, types, accountId) {
  const source = new pg.Client({ connectionString: sourceUrl });
  await source.connect();
  try {
    let after = '0';
    let copied = 0;
    for (;;) {
      const { rows } = await source.query(
        `SELECT ${columns.join(', ')} FROM ${from} WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
        [accountId, after, COPY_BATCH],
      );
      if (rows.length === 0) break;
      // bigint arrives as a string (pg's default), which keeps the cursor exact.
      const column = (key) => rows.map((row) => row[key]);
      await target.query(
        `INSERT INTO ${to} (${columns.join(', ')}) SELECT * FROM unnest(${types.map((type, i) => `$${i + 1}::${type}[]`).join(', ')})`,
        columns.map(column),
      );
      copied += rows.length;
      after = rows.at(-1).seq;
    }
    if (copied > 0) await target.query(`SELECT setval(pg_get_serial_sequence('${to}', 'seq'), (SELECT max(seq) FROM ${to}))`);
    return copied;
  } finally {
    await source.end();
  }
}

/** Starts server.mjs on the prepared database; resolves with { child, url, token, pid, startMs }. */
export async function startReference(config, rows) {
  const port = await freePort();
  const pgUrl = new URL(config.pgUrl);
  const env = {
    ...process.env,
    PGHOST: pgUrl.hostname,
    PGPORT: pgUrl.port || '5432',
    PGUSER: decodeURIComponent(pgUrl.username) || 'postgres',
    ...(pgUrl.password ? { PGPASSWORD: decodeURIComponent(pgUrl.password) } : {}),
    REF_DB: databaseNames(config).reference,
    // Equal to the rows copied, so that server.mjs keeps them instead of generating its own.
    REF_ROWS: String(rows),
    PORT: String(port),
  };
  const started = performance.now();
  const child = spawn(process.execPath, [join(referenceDir, 'server.mjs')], { cwd: referenceDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr.pipe(createWriteStream(join(resultsDir, 'logs', 'reference.log')));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const line = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the reference exited (code ${code}); see ${join(resultsDir, 'logs', 'reference.log')}`)));
  });
  const { url, token } = JSON.parse(line);
  return {
    child,
    url,
    token,
    startMs: Math.round(performance.now() - started),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
