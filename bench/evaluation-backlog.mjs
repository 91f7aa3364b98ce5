#!/usr/bin/env node
// `npm run bench:evaluation-backlog` (issue 30, fault (b)): do two workers catch up a backlog of readings?
// The gateway, one OMS, one DMS and two workers as separate processes (databases bench_backlog_*).
//
// Setup: BENCH_BACKLOG_SHIPMENTS (1000) InTransit shipments with one tracker each and a TemperatureHigh
// condition, 100 places; each tracker reports one reading per second of event time (a position and a
// temperature), ingested in batches of 1000 readings paced to BENCH_BACKLOG_RATE (1000) readings/s, as
// bench:evaluation does. Lateness is the default (600 s).
//
// Run: BENCH_WARMUP seconds with both workers; both workers stopped (SIGTERM) for BENCH_BACKLOG_SECONDS
// (120) while ingest goes on (the backlog: 120000 readings); both started again, ingest still going.
// Measured: the time from the restart until the evaluation has caught up (no message of the evaluation's
// consumers left undelivered, at most one second of traffic unacknowledged, and the newest reading the
// workers evaluated less than 5 s old), the workers' peak RSS meanwhile (their /metrics, every second),
// and the state restores it took. Gives up after BENCH_BACKLOG_LIMIT (300) seconds.
import { jetstreamManager } from '@nats-io/jetstream';
import { readBenchConfig } from './lib/config.mjs';
import { api, inPool, issueToken } from './lib/http.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import { provision } from './lib/seed.mjs';
import { BenchStack, databaseNames, databaseUrl, resetDatabases, sleep } from './lib/stack.mjs';
import { loadavg } from 'node:os';
import pg from 'pg';

const base = readBenchConfig();
const int = (name, fallback) => Number(process.env[name] ?? fallback);
const config = {
  ...base,
  prefix: process.env.BENCH_PREFIX ? base.prefix : 'bench_backlog',
  shipments: int('BENCH_BACKLOG_SHIPMENTS', 1000),
  rate: int('BENCH_BACKLOG_RATE', 1000),
  backlogSeconds: int('BENCH_BACKLOG_SECONDS', 120),
  limitSeconds: int('BENCH_BACKLOG_LIMIT', 300),
  warmup: int('BENCH_WARMUP', 20),
};
const PLACES = 100;
const BATCH_DEVICES = 100;
const READINGS_PER_DEVICE = 10;
const WORKERS = ['worker', 'worker2'];
const stack = await new BenchStack(config, { services: ['oms', 'dms', ...WORKERS, 'gateway'] }).prepare();
Object.assign(stack.env, { OMS_DATABASE_POOL_SIZE: process.env.OMS_DATABASE_POOL_SIZE ?? '20' });
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config } };

const placeAt = (i) => ({ lat: 45 + (i % 10) * 0.5, lng: 2 + Math.floor(i / 10) * 0.5 });

async function main() {
  const names = databaseNames(config);
  print(`Evaluation backlog: ${config.shipments} shipments of one tracker at ${config.rate} readings/s; both workers ` +
    `stopped for ${config.backlogSeconds} s, then started again`);
  await resetDatabases(config, [names.gateway, names.oms, names.dms]);
  const { credentials, readAccountId: accountId } = provision(stack);
  await stack.start('backlog');
  const token = await issueToken(stack.base, credentials);
  const at = (path) => `/v1/accounts/${accountId}${path}`;
  print('Seeding...');
  const places = await inPool('places', PLACES, 16, async (i) => {
    const { body } = await api(stack.base, 'POST', at('/points-of-interest'), {
      token,
      body: { name: `Depot ${i}`, kind: 'Warehouse', location: placeAt(i), radiusMeters: 500, dwellSeconds: 30 },
    });
    return body.id;
  });
  const trackers = await inPool('shipments', config.shipments, 16, async (i) => {
    const body = { name: `Backlog ${i}`, conditions: { temperature: { maxC: 8, minDurationSeconds: 60 } } };
    const { body: shipment } = await api(stack.base, 'POST', at('/shipments'), { token, body });
    const { body: set } = await api(stack.base, 'POST', at(`/shipments/${shipment.id}/sets`), { token, body: { name: 'Pallet', kind: 'Pallet' } });
    const { body: device } = await api(stack.base, 'POST', at('/devices'), { token, body: { serialNumber: `BACKLOG-${String(i).padStart(6, '0')}`, model: 'TempTrack T4' } });
    await api(stack.base, 'PUT', at(`/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`), { token });
    await api(stack.base, 'POST', at(`/shipments/${shipment.id}/start`), { token });
    return { deviceId: device.id, centre: placeAt(i % PLACES), offset: Math.floor(Math.random() * 200) };
  });
  void places;
  const dms = new pg.Client({ connectionString: databaseUrl(config, names.dms) });
  await dms.connect();
  await dms.query("UPDATE assignment_periods SET assigned_at = assigned_at - interval '3 hours'");
  await dms.end();

  const devices = trackers.results;
  const eventStart = Date.now() - 2.5 * 3_600_000;
  const clock = devices.map(() => 0);
  const groups = Math.ceil(devices.length / BATCH_DEVICES);
  let group = 0;
  function batch() {
    const readings = [];
    const g = group++ % groups;
    for (let d = g * BATCH_DEVICES; d < Math.min(devices.length, (g + 1) * BATCH_DEVICES); d++) {
      const device = devices[d];
      for (let r = 0; r < READINGS_PER_DEVICE; r++) {
        const s = clock[d]++;
        const phase = (s + device.offset) % 200;
        const inside = phase >= 100 && phase < 160;
        readings.push({
          deviceId: device.deviceId,
          recordedAt: new Date(eventStart + s * 1000).toISOString(),
          location: { lat: device.centre.lat + (inside ? 0 : 0.05), lng: device.centre.lng, accuracyMeters: 10 },
          temperatureC: phase >= 20 && phase < 110 ? 10 : 4,
        });
      }
    }
    return readings;
  }
  // Ingest, paced, until told to stop.
  let ingesting = true;
  let sent = 0;
  const ingest = (async () => {
    const interval = (BATCH_DEVICES * READINGS_PER_DEVICE * 1000) / config.rate;
    let nextAt = performance.now();
    while (ingesting) {
      const wait = nextAt - performance.now();
      nextAt = Math.max(nextAt, performance.now()) + interval;
      if (wait > 0) await sleep(wait);
      const readings = batch();
      await api(stack.base, 'POST', at('/readings'), { token, body: { readings } });
      sent += readings.length;
    }
  })();

  const jsm = await jetstreamManager(stack.nats);
  const stream = `${stack.env.NATS_SUBJECT_PREFIX.replace(/[^A-Za-z0-9_-]/g, '_')}READINGS`;
  async function backlog() {
    let pending = 0;
    let unacknowledged = 0;
    for await (const info of jsm.consumers.list(stream)) {
      if (!info.name.includes('shipment-evaluation')) continue;
      pending += info.num_pending;
      unacknowledged += info.num_ack_pending;
    }
    return { pending, unacknowledged };
  }
  async function workerMetrics(name) {
    try {
      const text = await (await fetch(`http://127.0.0.1:${stack.ports[name]}/metrics`)).text();
      const value = (metric) => Number(text.match(new RegExp(`^${metric}(?:\\{[^}]*\\})? (\\S+)$`, 'm'))?.[1] ?? NaN);
      return { rss: value('process_resident_memory_bytes') / 1e6, restores: value('evaluation_restores_total'), age: value('evaluation_newest_reading_age_seconds') };
    } catch {
      return { rss: NaN, restores: NaN, age: NaN };
    }
  }

  print(`Warm-up with both workers (${config.warmup} s)...`);
  await sleep(config.warmup * 1000);
  print(`Both workers stopped for ${config.backlogSeconds} s; ingest goes on...`);
  stack.stopping = true;
  await Promise.all(WORKERS.map((name) => stopService(name)));
  stack.stopping = false;
  const sentBefore = sent;
  await sleep(config.backlogSeconds * 1000);
  const queued = await backlog();
  const backlogReadings = sent - sentBefore;
  print(`  backlog: ${backlogReadings} readings sent meanwhile; ${queued.pending} messages undelivered`);

  const restarted = performance.now();
  for (const name of WORKERS) stack.spawnService(name, 'backlog');
  await Promise.all(WORKERS.map((name) => stack.waitUntilReady(name, performance.now())));
  const peak = Object.fromEntries(WORKERS.map((name) => [name, 0]));
  let caughtUp = null;
  const samples = [];
  while (performance.now() - restarted < config.limitSeconds * 1000) {
    await sleep(1000);
    const state = await backlog();
    const metrics = await Promise.all(WORKERS.map(workerMetrics));
    WORKERS.forEach((name, i) => (peak[name] = Math.max(peak[name], metrics[i].rss || 0)));
    const elapsed = Math.round((performance.now() - restarted) / 1000);
    samples.push({ elapsed, ...state, rss: metrics.map((m) => Math.round(m.rss)), age: metrics.map((m) => m.age) });
    if (elapsed % 10 === 0) print(`  +${elapsed} s: ${state.pending} undelivered, ${state.unacknowledged} unacknowledged, RSS ${metrics.map((m) => Math.round(m.rss)).join(' / ')} MB, newest age ${metrics.map((m) => m.age).join(' / ')} s`);
    const fresh = metrics.every((m) => Number.isFinite(m.age) && m.age < 5);
    if (state.pending === 0 && state.unacknowledged <= config.rate / READINGS_PER_DEVICE && fresh) {
      caughtUp = (performance.now() - restarted) / 1000;
      break;
    }
  }
  const restores = (await Promise.all(WORKERS.map(workerMetrics))).map((m) => m.restores);
  ingesting = false;
  await ingest;
  results.backlogReadings = backlogReadings;
  results.caughtUpSeconds = caughtUp === null ? null : Math.round(caughtUp * 10) / 10;
  results.peakRssMb = Object.fromEntries(Object.entries(peak).map(([k, v]) => [k, Math.round(v)]));
  results.restores = restores;
  results.loadAverage = loadavg().map((v) => Math.round(v * 100) / 100);
  results.samples = samples;
  print(table(['figure', 'value'], [
    ['backlog (readings ingested while both workers were stopped)', backlogReadings],
    ['caught up after the restart, s', results.caughtUpSeconds ?? `not within ${config.limitSeconds} s`],
    ['peak RSS per worker, MB', Object.values(results.peakRssMb).join(' / ')],
    ['state restores per worker', restores.join(' / ')],
    ['load average (1, 5, 15 min) at the end', results.loadAverage.join(', ')],
  ]));
  writeResults('evaluation-backlog', results);
}

/** SIGTERM one service and wait for it (its partitions are handed over, its batches finish). */
async function stopService(name) {
  const child = stack.children.get(name);
  if (!child) return;
  child.kill('SIGTERM');
  await child.exited;
  stack.children.delete(name);
}

let exitCode = 0;
try {
  await main();
} catch (error) {
  process.stderr.write(`\nbench:evaluation-backlog failed: ${error.stack ?? error}\n`);
  exitCode = 1;
} finally {
  await stack.close();
}
process.exit(exitCode);
