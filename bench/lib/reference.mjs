// The list-shipments reference (bench/reference/server.mjs, this repository's yardstick) run on
// the same data as the stack: its database gets its own `shipment` table filled with a copy of the
// benchmark account's rows (same ids, account, names, statuses, references and paging order), so that
// the same call, GET /v1/accounts/{our account}/shipments?limit=50, pages through the same 100000 shipments.
import { spawn, execFileSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { SCHEMA_STATEMENTS, SHIPMENT_COLUMNS } from '../reference/schema.mjs';
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

/** Recreates the reference database with the table of server.mjs and a copy of the account's shipments. */
export async function prepareReferenceData(config, accountId) {
  const names = databaseNames(config);
  await resetDatabases(config, [names.reference]);
  const source = new pg.Client({ connectionString: databaseUrl(config, names.oms) });
  const target = new pg.Client({ connectionString: databaseUrl(config, names.reference) });
  await source.connect();
  await target.connect();
  try {
    // The table and index of server.mjs (bench/reference/schema.mjs; it skips both when they exist).
    for (const statement of SCHEMA_STATEMENTS) await target.query(statement);
    let after = '0';
    let copied = 0;
    for (;;) {
      const { rows } = await source.query(
        `SELECT ${SHIPMENT_COLUMNS.join(', ')} FROM shipments
          WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
        [accountId, after, COPY_BATCH],
      );
      if (rows.length === 0) break;
      // bigint arrives as a string (pg's default), which keeps the cursor exact.
      const column = (key) => rows.map((row) => row[key]);
      await target.query(
        `INSERT INTO shipment (${SHIPMENT_COLUMNS.join(', ')})
         SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::timestamptz[])`,
        SHIPMENT_COLUMNS.map(column),
      );
      copied += rows.length;
      after = rows.at(-1).seq;
    }
    await target.query("SELECT setval(pg_get_serial_sequence('shipment', 'seq'), (SELECT max(seq) FROM shipment))");
    await target.query('ANALYZE shipment');
    return copied;
  } finally {
    await source.end();
    await target.end();
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
