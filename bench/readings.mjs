#!/usr/bin/env node
// `npm run bench:readings` (issue 21): sustained ingest of readings through the gateway, batches of
// BENCH_READINGS_BATCH (1000) readings with BENCH_READINGS_IN_FLIGHT (4) requests in flight, against a
// bare batched insert of the same rows (one `INSERT ... SELECT FROM unnest(...) ON CONFLICT DO NOTHING`
// per batch, the same number in flight, into a plain table with the same unique index), the two
// alternating in the same run (gateway 1, bare 1, gateway 2, ...). Then again with
// BENCH_READINGS_PRELOAD (10 million) readings stored in both tables (generated in SQL). Prints the median
// of BENCH_RUNS runs of BENCH_DURATION seconds: readings/s, p50 and p99 of a batch, and the ratio.
//
// Runs the gateway, one OMS and one DMS (outbox relay on: each batch is also published on JetStream) on
// databases of their own (bench_readings_*).
import pg from 'pg';
import { readBenchConfig } from './lib/config.mjs';
import { issueToken } from './lib/http.mjs';
import { median } from './lib/load.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import { provision, seedDevices } from './lib/seed.mjs';
import { BenchStack, databaseNames, databaseUrl, resetDatabases, sleep } from './lib/stack.mjs';

const DAY_MS = 86_400_000;
const base = readBenchConfig();
const config = {
  ...base,
  prefix: 'bench_readings',
  batch: Number(process.env.BENCH_READINGS_BATCH ?? 1000),
  inFlight: Number(process.env.BENCH_READINGS_IN_FLIGHT ?? 4),
  /** Devices of the account; each batch holds `batch / devicesPerBatch` readings of each of `devicesPerBatch` devices. */
  devices: Number(process.env.BENCH_READINGS_DEVICES ?? 1000),
  devicesPerBatch: Number(process.env.BENCH_READINGS_DEVICES_PER_BATCH ?? 100),
  preload: Number(process.env.BENCH_READINGS_PRELOAD ?? 10_000_000),
};
/** BENCH_PROFILE=1: CPU profiles of every service over the first measured gateway run (bench/results/profiles). */
const profile = process.env.BENCH_PROFILE === '1';
const stack = await new BenchStack(config, { services: ['oms', 'dms', 'gateway'], profile }).prepare();
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config }, phases: {} };

const COLUMNS = [
  'lat',
  'lng',
  'accuracy_meters',
  'altitude_meters',
  'speed_mps',
  'heading_degrees',
  'temperature_c',
  'humidity_percent',
  'shock_g',
  'light_lux',
  'battery_percent',
  'pressure_hpa',
];
const BARE_INSERT = `
  INSERT INTO bare_readings (id, tenant_id, account_id, device_id, recorded_at, received_at, ${COLUMNS.join(', ')})
  SELECT u.id, $1, $2, u.device_id, u.recorded_at, now(), ${COLUMNS.map((c) => `u.${c}`).join(', ')}
    FROM unnest($3::uuid[], $4::uuid[], $5::timestamptz[], ${COLUMNS.map((_, i) => `$${i + 6}::float8[]`).join(', ')})
      AS u (id, device_id, recorded_at, ${COLUMNS.join(', ')})
  ON CONFLICT DO NOTHING`;

/** Event time of the next batch: every batch moves on one millisecond per reading of a device. */
let clock = Date.now() - 6 * 3_600_000;

/**
 * One batch as the API takes it: `devicesPerBatch` consecutive devices of the lane's share of the devices
 * (lanes never share a device, as a device cloud's connections each forward their own trackers), each
 * with `batch / devicesPerBatch` readings.
 */
function makeBatch(deviceIds, lane) {
  const perDevice = config.batch / config.devicesPerBatch;
  const share = Math.floor(deviceIds.length / config.inFlight);
  const first = lane * share + Math.floor(Math.random() * (share - config.devicesPerBatch + 1));
  const start = clock;
  clock += perDevice;
  const readings = [];
  for (let d = 0; d < config.devicesPerBatch; d++) {
    const deviceId = deviceIds[first + d];
    for (let r = 0; r < perDevice; r++) {
      readings.push({
        deviceId,
        recordedAt: new Date(start + r).toISOString(),
        location: { lat: 51.9 + r / 1000, lng: 4.1 + d / 1000, accuracyMeters: 8 },
        temperatureC: 4 + (r % 10) / 10,
        batteryPercent: 80,
      });
    }
  }
  return readings;
}

/** Runs `send` with `inFlight` calls at a time for `seconds`; returns readings/s and batch latencies. */
async function sustain(seconds, send) {
  const latencies = [];
  let readings = 0;
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  async function lane(_, index) {
    while (performance.now() < until) {
      const t0 = performance.now();
      // Not `readings += await send(index)`: that reads `readings` before the await, so the lanes'
      // additions overwrote each other and the figure was about a quarter of the real rate.
      const stored = await send(index);
      readings += stored;
      latencies.push(performance.now() - t0);
    }
  }
  await Promise.all(Array.from({ length: config.inFlight }, lane));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))] * 10) / 10;
  return { perSecond: Math.round(readings / elapsed), batches: latencies.length, p50: pct(50), p99: pct(99) };
}

async function main() {
  const names = databaseNames(config);
  print(`Readings benchmark: batches of ${config.batch} (${config.devicesPerBatch} devices), ${config.inFlight} in flight, ` +
    `${config.runs} runs of ${config.duration} s, then again with ${config.preload} readings stored`);
  await resetDatabases(config, [names.gateway, names.oms, names.dms]);
  const { credentials, readAccountId: accountId } = provision(stack);
  results.startup = await stack.start('readings');
  const token = await issueToken(stack.base, credentials);
  const devices = await seedDevices(stack.base, token, accountId, config.devices, config.seedConcurrency, 'READ');
  const deviceIds = devices.results;

  const dmsUrl = databaseUrl(config, names.dms);
  const admin = new pg.Client({ connectionString: dmsUrl });
  await admin.connect();
  await admin.query('CREATE TABLE bare_readings (LIKE readings INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)');
  const pool = new pg.Pool({ connectionString: dmsUrl, max: config.inFlight });
  const tenantId = credentials.tenantId;

  const viaGateway = async (lane) => {
    const body = JSON.stringify({ readings: makeBatch(deviceIds, lane) });
    const response = await fetch(`${stack.base}/v1/accounts/${accountId}/readings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
    });
    const answer = await response.json();
    if (response.status !== 200 || answer.rejected.length > 0) throw new Error(`ingest answered ${response.status}: ${JSON.stringify(answer).slice(0, 300)}`);
    return answer.accepted;
  };
  const bare = async (lane) => {
    const batch = makeBatch(deviceIds, lane);
    const values = [
      tenantId,
      accountId,
      batch.map(() => crypto.randomUUID()),
      batch.map((r) => r.deviceId),
      batch.map((r) => r.recordedAt),
      batch.map((r) => r.location.lat),
      batch.map((r) => r.location.lng),
      batch.map((r) => r.location.accuracyMeters),
      batch.map(() => null),
      batch.map(() => null),
      batch.map(() => null),
      batch.map((r) => r.temperatureC),
      batch.map(() => null),
      batch.map(() => null),
      batch.map(() => null),
      batch.map((r) => r.batteryPercent),
      batch.map(() => null),
    ];
    const result = await pool.query(BARE_INSERT, values);
    return result.rowCount;
  };

  async function phase(label) {
    print(`\n${label}:`);
    await sustain(config.warmup, viaGateway);
    await sustain(config.warmup, bare);
    const runs = [];
    for (let run = 1; run <= config.runs; run++) {
      const profiling = profile && run === 1 && Object.keys(results.phases).length === 0;
      if (profiling) stack.signal('SIGWINCH');
      const gateway = await sustain(config.duration, viaGateway);
      if (profiling) {
        stack.signal('SIGWINCH');
        await sleep(3000);
      }
      const direct = await sustain(config.duration, bare);
      stack.assertAlive();
      runs.push({ gateway, bare: direct, ratio: Math.round((gateway.perSecond / direct.perSecond) * 100) / 100 });
      print(`  run ${run}: gateway ${gateway.perSecond} readings/s (p50 ${gateway.p50} ms, p99 ${gateway.p99} ms), ` +
        `bare insert ${direct.perSecond} rows/s (p99 ${direct.p99} ms), ratio ${runs.at(-1).ratio}`);
    }
    const summary = {
      gatewayPerSecond: median(runs.map((r) => r.gateway.perSecond)),
      gatewayP50: median(runs.map((r) => r.gateway.p50)),
      gatewayP99: median(runs.map((r) => r.gateway.p99)),
      barePerSecond: median(runs.map((r) => r.bare.perSecond)),
      ratio: median(runs.map((r) => r.ratio)),
      storedAfter: Number((await admin.query('SELECT count(*) AS n FROM readings')).rows[0].n),
      outboxBacklog: Number((await admin.query('SELECT count(*) AS n FROM outbox')).rows[0].n),
    };
    results.phases[label] = { runs, median: summary };
    return summary;
  }

  const empty = await phase('near-empty tables');

  print(`\nPreloading ${config.preload} readings into each table (generate_series)...`);
  const preloadStarted = performance.now();
  const days = 30;
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  for (let day = today - days * DAY_MS; day <= today; day += DAY_MS) {
    const name = `readings_p${new Date(day).toISOString().slice(0, 10).replaceAll('-', '')}`;
    await admin.query(
      `CREATE TABLE IF NOT EXISTS ${name} PARTITION OF readings FOR VALUES FROM ('${new Date(day).toISOString()}') TO ('${new Date(day + DAY_MS).toISOString()}')`,
    );
  }
  // Each device gets preload/devices readings, spread over the last `days` days before the measured ones.
  for (const table of ['readings', 'bare_readings']) {
    await admin.query(
      `INSERT INTO ${table} (id, tenant_id, account_id, device_id, recorded_at, received_at, lat, lng, accuracy_meters, temperature_c, battery_percent)
       SELECT gen_random_uuid(), $1, $2, d.id, $3::timestamptz - (g * interval '1 millisecond' * $5), now(), 51.9, 4.1, 8, 4.5, 80
         FROM unnest($4::uuid[]) AS d (id), generate_series(1, $6::int) AS g
       ON CONFLICT DO NOTHING`,
      [tenantId, accountId, new Date(today - DAY_MS).toISOString(), deviceIds, Math.floor(((days - 1) * DAY_MS) / (config.preload / deviceIds.length)), Math.ceil(config.preload / deviceIds.length)],
    );
  }
  await admin.query('ANALYZE readings');
  await admin.query('ANALYZE bare_readings');
  results.preloadSeconds = Math.round((performance.now() - preloadStarted) / 1000);
  print(`  preloaded in ${results.preloadSeconds} s`);
  const loaded = await phase(`${config.preload} readings stored`);

  print('\nMedians:');
  print(
    table(
      ['phase', 'gateway readings/s', 'p50 ms', 'p99 ms', 'bare rows/s', 'ratio', 'stored after', 'outbox backlog'],
      [
        ['near-empty', empty.gatewayPerSecond, empty.gatewayP50, empty.gatewayP99, empty.barePerSecond, empty.ratio, empty.storedAfter, empty.outboxBacklog],
        [`${config.preload} stored`, loaded.gatewayPerSecond, loaded.gatewayP50, loaded.gatewayP99, loaded.barePerSecond, loaded.ratio, loaded.storedAfter, loaded.outboxBacklog],
      ],
    ),
  );
  await pool.end();
  await admin.end();
  print(`\nAll figures: ${writeResults('readings-latest.json', results)}`);
}

try {
  await main();
} finally {
  await stack.close();
}
await sleep(0);
