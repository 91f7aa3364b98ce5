#!/usr/bin/env node
// `npm run bench:tracks` (issue 21): GET /shipments/{id}/track of a shipment with BENCH_TRACK_POSITIONS
// positions (default 100000) from BENCH_TRACK_DEVICES devices (default 4), one request at a time,
// BENCH_TRACK_REQUESTS times per variant after a warm-up; prints the median (p50), p90 and p99 latency
// through the gateway. Target: p50 <= 100 ms at maxPoints=1000.
//
// Runs the gateway, one OMS and one DMS on databases of its own (bench_tracks_*). The positions are
// sent through POST /readings, spread over the last BENCH_TRACK_DAYS days (several daily partitions);
// for that the devices' assignment periods are moved back to before the first position directly in the
// DMS database, as if the shipment had been under way for those days.
import pg from 'pg';
import { readBenchConfig } from './lib/config.mjs';
import { api, issueToken } from './lib/http.mjs';
import { median } from './lib/load.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import { provision } from './lib/seed.mjs';
import { BenchStack, analyzeDatabases, databaseNames, databaseUrl, resetDatabases, sleep } from './lib/stack.mjs';

const DAY_MS = 86_400_000;
const BATCH = 5000;
const env = (name, fallback) => Number(process.env[name] ?? fallback);
const config = {
  ...readBenchConfig(),
  prefix: 'bench_tracks',
  positions: env('BENCH_TRACK_POSITIONS', 100000),
  devices: env('BENCH_TRACK_DEVICES', 4),
  days: env('BENCH_TRACK_DAYS', 3),
  requests: env('BENCH_TRACK_REQUESTS', 200),
  warmup: env('BENCH_TRACK_WARMUP', 20),
};
/** BENCH_PROFILE=1: CPU profiles of every service over the first variant's measured requests (bench/results/profiles). */
const profile = process.env.BENCH_PROFILE === '1';
const stack = await new BenchStack(config, { services: ['oms', 'dms', 'gateway'], profile }).prepare();
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config }, variants: {} };

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const names = databaseNames(config);
  print(`Track benchmark: ${config.positions} positions from ${config.devices} devices over ${config.days} days`);
  await resetDatabases(config, [names.gateway, names.oms, names.dms]);
  const { credentials, readAccountId: accountId } = provision(stack);
  results.startup = await stack.start('tracks');
  const token = await issueToken(stack.base, credentials);
  const at = `/v1/accounts/${accountId}`;

  const { body: shipment } = await api(stack.base, 'POST', `${at}/shipments`, { token, body: { name: 'Tracked shipment' } });
  const { body: set } = await api(stack.base, 'POST', `${at}/shipments/${shipment.id}/sets`, { token, body: { name: 'Pallet 1', kind: 'Pallet' } });
  const deviceIds = [];
  for (let d = 0; d < config.devices; d++) {
    const { body: device } = await api(stack.base, 'POST', `${at}/devices`, { token, body: { serialNumber: `TRACK-${d}-${Date.now()}`, model: 'Bench' } });
    await api(stack.base, 'PUT', `${at}/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`, { token });
    deviceIds.push(device.id);
  }
  const end = Date.now() - 60_000;
  const start = end - config.days * DAY_MS;
  const dms = new pg.Client({ connectionString: databaseUrl(config, names.dms) });
  await dms.connect();
  await dms.query('UPDATE assignment_periods SET assigned_at = $2 WHERE shipment_id = $1', [shipment.id, new Date(start - 1000)]);
  await dms.end();

  const perDevice = Math.ceil(config.positions / config.devices);
  const step = Math.floor((end - start) / perDevice);
  const readings = [];
  for (let d = 0; d < config.devices; d++) {
    let lat = 40 + d;
    let lng = 5 + d;
    for (let i = 0; i < perDevice && readings.length < config.positions; i++) {
      lat += (Math.random() - 0.45) * 0.002;
      lng += (Math.random() - 0.4) * 0.002;
      readings.push({ deviceId: deviceIds[d], recordedAt: new Date(start + i * step + d).toISOString(), location: { lat, lng, accuracyMeters: 5 + (i % 20) } });
    }
  }
  const seedStarted = performance.now();
  for (let i = 0; i < readings.length; i += BATCH) {
    const { body } = await api(stack.base, 'POST', `${at}/readings`, { token, body: { readings: readings.slice(i, i + BATCH) } });
    if (body.rejected.length > 0) throw new Error(`readings rejected: ${JSON.stringify(body.rejected.slice(0, 3))}`);
  }
  results.seeding = { readings: readings.length, seconds: Math.round((performance.now() - seedStarted) / 100) / 10 };
  print(`Sent ${readings.length} readings in ${results.seeding.seconds} s`);
  await analyzeDatabases(config, [names.dms]);
  await sleep(1000);

  const variants = [
    ['json, maxPoints=1000', '?maxPoints=1000', {}],
    ['geojson, maxPoints=1000', '?maxPoints=1000', { accept: 'application/geo+json' }],
    ['json, maxPoints=10000', '?maxPoints=10000', {}],
    ['json, one device, maxPoints=1000', `?maxPoints=1000&deviceId=${deviceIds[0]}`, {}],
    ['json, a tenth of the window', `?from=${new Date(start).toISOString()}&to=${new Date(start + (end - start) / 10).toISOString()}`, {}],
  ];
  for (const [name, query, headers] of variants) {
    const url = `${stack.base}${at}/shipments/${shipment.id}/track${query}`;
    const call = async () => {
      const started = performance.now();
      const response = await fetch(url, { headers: { authorization: `Bearer ${token}`, ...headers } });
      const body = await response.json();
      if (response.status !== 200) throw new Error(`${name}: ${response.status} ${JSON.stringify(body)}`);
      return { ms: performance.now() - started, body };
    };
    for (let i = 0; i < config.warmup; i++) await call();
    const times = [];
    let last;
    const profiling = profile && Object.keys(results.variants).length === 0;
    if (profiling) stack.signal('SIGWINCH');
    for (let i = 0; i < config.requests; i++) {
      const { ms, body } = await call();
      times.push(ms);
      last = body;
    }
    if (profiling) {
      stack.signal('SIGWINCH');
      await sleep(3000);
    }
    const round = (value) => Math.round(value * 10) / 10;
    results.variants[name] = {
      p50: round(median(times)),
      p90: round(percentile(times, 90)),
      p99: round(percentile(times, 99)),
      count: last.metadata?.count ?? last.features?.reduce((sum, feature) => sum + (feature.geometry.type === 'Point' ? 1 : feature.geometry.coordinates.length), 0),
      totalPoints: last.metadata?.totalPoints ?? '',
    };
    stack.assertAlive();
  }
  print(`\n=== Track of ${readings.length} positions, ${config.requests} sequential requests per variant (ms) ===\n`);
  print(
    table(
      ['variant', 'p50', 'p90', 'p99', 'points', 'totalPoints'],
      Object.entries(results.variants).map(([name, v]) => [name, v.p50, v.p90, v.p99, v.count, v.totalPoints]),
    ),
  );
  print(`\nAll figures: ${writeResults('tracks-latest.json', results)}`);
}

let exitCode = 0;
try {
  await main();
} catch (error) {
  process.stderr.write(`\nbench:tracks failed: ${error.stack ?? error}\n`);
  exitCode = 1;
} finally {
  await stack.close();
}
process.exit(exitCode);
