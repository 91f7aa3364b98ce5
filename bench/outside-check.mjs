#!/usr/bin/env node
// The outside check of BENCHMARKS.md's table: list shipments (first page, limit=50, 50 connections) measured
// by the autocannon command line, a process of its own, against a stack started by `npm start` itself
// (scripts/start.mjs) on the databases `npm run bench` seeded, and against the reference started by hand
// on its copy of them. Runs alternate (ours, reference, ours, ...); prints each run, the medians and the
// load average. Start the stack first, e.g. (BENCH_PREFIX=bench as the bench's default):
//
//   PORT=3200 OPS_PORT=0 DEVICE_HTTP_PORT=3201 DEVICE_MQTT_PORT=3202 DEVICE_TELTONIKA_PORT=3203 \
//   GATEWAY_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_gateway \
//   OMS_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_oms DMS_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_dms \
//   NATS_SUBJECT_PREFIX=outside. REDIS_KEY_PREFIX=outside: KEY_ENCRYPTION_KEYS=<as printed by this script with --key> \
//   RATE_LIMIT_APPLICATION='1000000/1s burst 1000000' npm start
//
// then `node bench/outside-check.mjs http://127.0.0.1:3200`. Settings: OUTSIDE_RUNS (default 3),
// OUTSIDE_DURATION (s, default 10), BENCH_PREFIX (which seeded databases), REF_PORT (default 3210).
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { benchDir, readBenchConfig, resultsDir, root } from './lib/config.mjs';
import { issueToken } from './lib/http.mjs';
import { median } from './lib/load.mjs';
import { databaseNames } from './lib/stack.mjs';

const config = readBenchConfig();
if (process.argv[2] === '--key') {
  // The key-encryption key bench/lib/stack.mjs gives the services of this prefix.
  process.stdout.write(`bench:${createHash('sha256').update(`benchmark key-encryption key ${config.prefix}`).digest('base64')}\n`);
  process.exit(0);
}
const base = process.argv[2];
if (!base) throw new Error('usage: node bench/outside-check.mjs <gateway URL of npm start> (or --key)');
const runs = Number(process.env.OUTSIDE_RUNS ?? 3);
const duration = Number(process.env.OUTSIDE_DURATION ?? 10);
const state = JSON.parse(readFileSync(join(resultsDir, 'state.json'), 'utf8'));
const accountId = state.data.readAccountId;
const token = await issueToken(base, state.data.credentials);

// The reference's copy holds the seeded account's shipments; as many rows as the run that seeded them
// (state.json), or the reference would take its copy for another size and refill it with generated rows.
const reference = spawn(process.execPath, [join(benchDir, 'reference', 'server.mjs')], {
  cwd: join(benchDir, 'reference'),
  env: { ...process.env, PGHOST: '127.0.0.1', PGUSER: 'postgres', REF_DB: databaseNames(config).reference, REF_ROWS: String(state.config.shipments), PORT: process.env.REF_PORT ?? '3210' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const started = JSON.parse(await new Promise((resolve) => createInterface({ input: reference.stdout }).once('line', resolve)));

function autocannon(url, bearer) {
  const out = execFileSync(join(root, 'node_modules', '.bin', 'autocannon'), ['-c', '50', '-d', String(duration), '-j', '-H', `Authorization=Bearer ${bearer}`, url], {
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const result = JSON.parse(out.toString());
  return { rps: Math.round(result['2xx'] / result.duration), p99: result.latency.p99, non2xx: result.non2xx, load: Math.round(loadavg()[0] * 100) / 100 };
}

const ours = [];
const theirs = [];
try {
  autocannon(`${base}/v1/accounts/${accountId}/shipments?limit=50`, token); // warm-up
  for (let run = 1; run <= runs; run++) {
    ours.push(autocannon(`${base}/v1/accounts/${accountId}/shipments?limit=50`, token));
    theirs.push(autocannon(`${started.url}/v1/accounts/${accountId}/shipments?limit=50`, started.token));
    process.stdout.write(`run ${run}: npm start ${JSON.stringify(ours.at(-1))}; reference ${JSON.stringify(theirs.at(-1))}\n`);
  }
} finally {
  reference.kill('SIGTERM');
}
const m = (list, key) => median(list.map((entry) => entry[key]));
process.stdout.write(
  `\nlist shipments (first page) against npm start: ${m(ours, 'rps')} req/s, p99 ${m(ours, 'p99')} ms; ` +
    `reference ${m(theirs, 'rps')} req/s, p99 ${m(theirs, 'p99')} ms; throughput ${Math.round((m(ours, 'rps') / m(theirs, 'rps')) * 100) / 100} ×, ` +
    `p99 ${Math.round((m(ours, 'p99') / m(theirs, 'p99')) * 100) / 100} × (load average ${Math.min(...ours.map((r) => r.load))} to ${Math.max(...ours.map((r) => r.load))})\n`,
);
