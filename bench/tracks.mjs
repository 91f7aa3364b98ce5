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
//
// BENCH_TRACK_SEED=sql writes the positions straight into the DMS's readings table (generate_series, a
// random walk per device) instead: 500000 positions in seconds rather than minutes through the API.
// BENCH_TRACK_COST=1 measures what a track request costs rather than the variants below
// (docs/tracks.md, "Cost"): BENCH_TRACK_REQUESTS sequential requests at maxPoints=2 and at 1000, each
// with the latency and the CPU ms per request of the DMS and of PostgreSQL's backends; then another
// tenant's GET /shipments/{id} alone, and again while BENCH_TRACK_PARALLEL (default 12) track requests
// are sent at once, with the statuses those got and the track statements still running in PostgreSQL
// after their answers.
import pg from 'pg';
import { CpuMeter } from './lib/cpu.mjs';
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
  seed: process.env.BENCH_TRACK_SEED ?? 'api',
  cost: process.env.BENCH_TRACK_COST === '1',
  parallel: env('BENCH_TRACK_PARALLEL', 12),
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
  const seedStarted = performance.now();
  if (config.seed === 'sql') {
    const writer = new pg.Client({ connectionString: databaseUrl(config, names.dms) });
    await writer.connect();
    const { rows } = await writer.query('SELECT tenant_id, account_id FROM assignment_periods WHERE shipment_id = $1 LIMIT 1', [shipment.id]);
    // The DMS makes a day's partition when a reading of it arrives; written here directly, they are made first (as it names them).
    for (let day = Math.floor(start / DAY_MS) * DAY_MS; day <= end; day += DAY_MS) {
      const name = `readings_p${new Date(day).toISOString().slice(0, 10).replaceAll('-', '')}`;
      await writer.query(`CREATE TABLE IF NOT EXISTS ${name} PARTITION OF readings FOR VALUES FROM ('${new Date(day).toISOString()}') TO ('${new Date(day + DAY_MS).toISOString()}')`);
    }
    for (let d = 0; d < config.devices; d++) {
      const count = Math.min(perDevice, config.positions - d * perDevice);
      await writer.query(
        `INSERT INTO readings (id, tenant_id, account_id, device_id, recorded_at, received_at, lat, lng, accuracy_meters)
         SELECT gen_random_uuid(), $1, $2, $3, to_timestamp(0) + ($4::bigint + i * $5::bigint + $6) * interval '1 millisecond', now(),
                $7 + sum((random() - 0.45) * 0.002) OVER (ORDER BY i), $8 + sum((random() - 0.4) * 0.002) OVER (ORDER BY i), 5 + i % 20
           FROM generate_series(0, $9 - 1) AS i`,
        [rows[0].tenant_id, rows[0].account_id, deviceIds[d], start, step, d, 40 + d, 5 + d, count],
      );
    }
    await writer.end();
    results.seeding = { readings: config.positions, seconds: Math.round((performance.now() - seedStarted) / 100) / 10, through: 'sql' };
  } else {
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
    for (let i = 0; i < readings.length; i += BATCH) {
      const { body } = await api(stack.base, 'POST', `${at}/readings`, { token, body: { readings: readings.slice(i, i + BATCH) } });
      if (body.rejected.length > 0) throw new Error(`readings rejected: ${JSON.stringify(body.rejected.slice(0, 3))}`);
    }
    results.seeding = { readings: readings.length, seconds: Math.round((performance.now() - seedStarted) / 100) / 10, through: 'api' };
  }
  print(`Stored ${results.seeding.readings} positions through the ${results.seeding.through} in ${results.seeding.seconds} s`);
  await analyzeDatabases(config, [names.dms]);
  await sleep(1000);
  if (config.cost) {
    await measureCost({ names, token, at, shipmentId: shipment.id });
    print(`\nAll figures: ${writeResults('tracks-cost-latest.json', results)}`);
    return;
  }

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
  print(`\n=== Track of ${results.seeding.readings} positions, ${config.requests} sequential requests per variant (ms) ===\n`);
  print(
    table(
      ['variant', 'p50', 'p90', 'p99', 'points', 'totalPoints'],
      Object.entries(results.variants).map(([name, v]) => [name, v.p50, v.p90, v.p99, v.count, v.totalPoints]),
    ),
  );
  print(`\nAll figures: ${writeResults('tracks-latest.json', results)}`);
}

/** BENCH_TRACK_COST=1: latency and CPU per track request, and another tenant's GETs beside parallel tracks. */
async function measureCost({ names, token, at, shipmentId }) {
  const round = (value) => Math.round(value * 10) / 10;
  const maintenance = databaseUrl(config, 'postgres');
  const cpu = new CpuMeter(maintenance, () => stack.pids(), [names.dms]);
  const trackUrl = (query) => `${stack.base}${at}/shipments/${shipmentId}/track${query}`;
  const timed = async (url, authorization) => {
    const started = performance.now();
    const response = await fetch(url, { headers: { authorization: `Bearer ${authorization}` } });
    const body = await response.json();
    return { ms: performance.now() - started, status: response.status, body };
  };
  results.cost = {};
  for (const maxPoints of [2, 1000]) {
    for (let i = 0; i < config.warmup; i++) await timed(trackUrl(`?maxPoints=${maxPoints}`), token);
    const before = await cpu.sample();
    const times = [];
    const statuses = {};
    let last;
    for (let i = 0; i < config.requests; i++) {
      const answer = await timed(trackUrl(`?maxPoints=${maxPoints}`), token);
      statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
      if (answer.status === 200) last = answer;
      times.push(answer.ms);
    }
    const perRequest = CpuMeter.perRequest(before, await cpu.sample(), config.requests);
    results.cost[`maxPoints=${maxPoints}`] = {
      p50: round(median(times)),
      max: round(Math.max(...times)),
      dmsCpuMs: perRequest.dms,
      postgresCpuMs: perRequest.postgres,
      statuses: JSON.stringify(statuses),
      count: last?.body.metadata.count ?? '',
      totalPoints: last?.body.metadata.totalPoints ?? '',
    };
  }
  print(`\n=== Track of ${config.positions} positions, ${config.requests} sequential requests per variant ===\n`);
  print(
    table(
      ['maxPoints', 'p50 ms', 'max ms', 'DMS CPU ms/req', 'PostgreSQL CPU ms/req', 'statuses', 'points', 'totalPoints'],
      Object.entries(results.cost).map(([name, v]) => [name, v.p50, v.max, v.dmsCpuMs, v.postgresCpuMs, v.statuses, v.count, v.totalPoints]),
    ),
  );

  // Another tenant, with a shipment of its own, reading it by id.
  const { tenantId } = stack.admin('tenant', 'create', '--name', 'Bench neighbour');
  const { accountId } = stack.admin('account', 'create', '--tenant', tenantId, '--name', 'Neighbour');
  const app = stack.admin('application', 'create', '--tenant', tenantId, '--name', 'Neighbour', '--role', 'Admin', '--accounts', accountId);
  const neighbour = await issueToken(stack.base, { tenantId, applicationId: app.applicationId, applicationSecret: app.applicationSecret });
  const { body: theirs } = await api(stack.base, 'POST', `/v1/accounts/${accountId}/shipments`, { token: neighbour, body: { name: 'Neighbour shipment' } });
  const neighbourUrl = `${stack.base}/v1/accounts/${accountId}/shipments/${theirs.id}`;
  const neighbourGets = async (until) => {
    const times = [];
    while (!until()) {
      const { ms, status } = await timed(neighbourUrl, neighbour);
      if (status !== 200) throw new Error(`neighbour GET: ${status}`);
      times.push(ms);
    }
    return times;
  };
  let quietCount = 0;
  const quiet = await neighbourGets(() => quietCount++ >= 50);
  let done = false;
  const started = performance.now();
  const tracks = Promise.all(
    Array.from({ length: config.parallel }, () => timed(trackUrl('?maxPoints=1000'), token).then(({ ms, status }) => ({ ms, status }))),
  ).finally(() => (done = true));
  const busy = await neighbourGets(() => done);
  const answers = await tracks;
  const wallMs = performance.now() - started;
  const watcher = new pg.Client({ connectionString: databaseUrl(config, names.dms) });
  await watcher.connect();
  const { rows } = await watcher.query(
    "SELECT count(*)::int AS running FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query LIKE '%FROM readings r%' AND pid <> pg_backend_pid()",
  );
  await watcher.end();
  const statuses = {};
  for (const { status } of answers) statuses[status] = (statuses[status] ?? 0) + 1;
  const summary = (times) => `p50 ${round(median(times))}, p99 ${round(percentile(times, 99))}, max ${round(Math.max(...times))} (${times.length} GETs)`;
  results.parallel = {
    tracks: config.parallel,
    statuses,
    trackMs: answers.map(({ ms }) => Math.round(ms)).sort((a, b) => a - b),
    wallMs: Math.round(wallMs),
    stillRunningInPostgres: rows[0].running,
    neighbourQuiet: { p50: round(median(quiet)), p99: round(percentile(quiet, 99)), max: round(Math.max(...quiet)) },
    neighbourBusy: { p50: round(median(busy)), p99: round(percentile(busy, 99)), max: round(Math.max(...busy)), requests: busy.length },
  };
  print(`\n=== ${config.parallel} track requests (maxPoints=1000) at once ===\n`);
  print(`statuses ${JSON.stringify(statuses)}; answered after ${results.parallel.trackMs.join(', ')} ms`);
  print(`track statements still running in PostgreSQL after the last answer: ${rows[0].running}`);
  print(`another tenant's GET /shipments/{id} alone: ${summary(quiet)}`);
  print(`another tenant's GET /shipments/{id} meanwhile: ${summary(busy)}`);
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
