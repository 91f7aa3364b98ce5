#!/usr/bin/env node
// `npm run bench:evaluation` (issue 22): does the evaluation of readings keep up with ingest? The gateway,
// one OMS, one DMS and one worker (which evaluates) as separate processes on databases of their own
// (bench_evaluation_*).
//
// Setup: BENCH_EVAL_PLACES (5000) points of interest scattered over western Europe (radius 200 m, dwell
// 30 s), BENCH_EVAL_SHIPMENTS (1000) InTransit shipments with one tracker each. Each tracker loops in event
// time: 100 s far from "its" place, 60 s inside it, 40 s far again (a cycle starting at a random offset),
// one reading per second of event time with a position and a temperature. The trackers' links are
// backdated in the DMS database by two hours (SQL), so that event time can start an hour ago and run
// ahead of the wall clock without passing the API's 5-minute limit on future readings.
//
// Load: batches of 1000 readings (100 trackers x 10 s of event time), BENCH_EVAL_IN_FLIGHT (4) in flight,
// paced to BENCH_EVAL_RATE (10000) readings/s, for BENCH_DURATION seconds per run.
//
// Measured: the lag from the ingest commit of the reading that confirms an arrival (the first one recorded
// at arrivedAt + dwell; the POST's 200 comes after the commit) to the arrival's `shipment.arrived` in the
// feed (`GET /events`, polled every 100 ms, so up to 100 ms is the poll's). With per-device watermarks a
// single tracker's arrival is published from that reading's evaluation; EVALUATION_LATENESS_SECONDS
// (BENCH_EVAL_LATENESS, 60 s) only bounds how long a silent device holds a shipment back. Also the ingest
// rate reached, the batches' p99 and arrivals missing at the end. Prints medians of BENCH_RUNS runs.
// BENCH_PREFIX (bench_<letters>) names the databases instead of bench_evaluation, so that two people can
// run it on one PostgreSQL.
//
// BENCH_EVAL_WORKERS (2): after the runs with one worker, a second worker joins (the evaluation's
// partitions are rebalanced between them, docs/geofence-evaluation.md, "Ownership"), a second warm-up
// takes the handover, and the runs are measured again: both figures come from the same run, on the same
// machine load. Each run also reports the evaluation's state restores per minute over both workers
// (`evaluation_restores_total`; with one owner per shipment, none in steady state) and the workers' RSS.
// BENCH_EVAL_DESTINATION=1 gives each shipment a destination (another place), so that every evaluation also
// estimates its arrival (docs/eta.md): run it with 0 and 1 on the same build to see what estimates cost.
// CPU per 1000 readings sent, of the workers, the OMS and PostgreSQL's backends of the OMS database (from
// /proc, over the run and the wait for its last arrivals), and the load average at the start of each run:
// on a shared machine the CPU moves less than the lag, so it is the figure to compare A/B runs by.
import { loadavg } from 'node:os';
import pg from 'pg';
import { CpuMeter } from './lib/cpu.mjs';
import { readBenchConfig } from './lib/config.mjs';
import { api, inPool, issueToken } from './lib/http.mjs';
import { median } from './lib/load.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import { provision } from './lib/seed.mjs';
import { BenchStack, databaseNames, databaseUrl, resetDatabases, sleep } from './lib/stack.mjs';

const base = readBenchConfig();
const int = (name, fallback) => Number(process.env[name] ?? fallback);
const config = {
  ...base,
  prefix: process.env.BENCH_PREFIX ? base.prefix : 'bench_evaluation',
  places: int('BENCH_EVAL_PLACES', 5000),
  shipments: int('BENCH_EVAL_SHIPMENTS', 1000),
  rate: int('BENCH_EVAL_RATE', 10000),
  inFlight: int('BENCH_EVAL_IN_FLIGHT', 4),
  lateness: int('BENCH_EVAL_LATENESS', 60),
  workers: int('BENCH_EVAL_WORKERS', 2),
  /** BENCH_EVAL_DESTINATION=1: each shipment gets a destination (another place), so the estimated arrival is made on every evaluation (docs/eta.md). */
  destination: process.env.BENCH_EVAL_DESTINATION === '1',
};
const DWELL_S = 30;
const CYCLE_S = 200;
const BATCH_DEVICES = 100;
const READINGS_PER_DEVICE = 10;
/** BENCH_PROFILE=1: CPU profiles of every service over the first measured run (bench/results/profiles). */
const profile = process.env.BENCH_PROFILE === '1';
const stack = await new BenchStack(config, { services: ['oms', 'dms', 'worker', 'gateway'], profile }).prepare();
Object.assign(stack.env, {
  EVALUATION_LATENESS_SECONDS: String(config.lateness),
  OMS_DATABASE_POOL_SIZE: process.env.OMS_DATABASE_POOL_SIZE ?? '20',
});
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config }, runs: [] };

/** A deterministic scatter: place i at a pseudo-random spot of lat 43..53, lng -1..14. */
function placeAt(i) {
  const x = Math.sin(i * 12.9898) * 43758.5453;
  const y = Math.sin(i * 78.233) * 12543.1234;
  return { lat: 43 + (x - Math.floor(x)) * 10, lng: -1 + (y - Math.floor(y)) * 15 };
}

async function main() {
  const names = databaseNames(config);
  print(`Evaluation benchmark: ${config.places} places, ${config.shipments} InTransit shipments of one tracker${config.destination ? ' with a destination' : ''}, ` +
    `ingest paced to ${config.rate} readings/s, lateness ${config.lateness} s, ${config.runs} runs of ${config.duration} s`);
  await resetDatabases(config, [names.gateway, names.oms, names.dms]);
  const { credentials, readAccountId: accountId } = provision(stack);
  results.startup = await stack.start('evaluation');
  const token = await issueToken(stack.base, credentials);
  const at = (path) => `/v1/accounts/${accountId}${path}`;

  print('Seeding places and shipments...');
  const places = await inPool('places', config.places, config.seedConcurrency, async (i) => {
    const { body } = await api(stack.base, 'POST', at('/points-of-interest'), {
      token,
      body: { name: `Depot ${i}`, kind: 'Warehouse', location: placeAt(i), radiusMeters: 200, dwellSeconds: DWELL_S },
    });
    return body.id;
  });
  const trackers = await inPool('shipments', config.shipments, config.seedConcurrency, async (i) => {
    const destinationId = config.destination ? places.results[(i * 5 + 1) % config.places] : undefined;
    const { body: shipment } = await api(stack.base, 'POST', at('/shipments'), { token, body: { name: `Eval ${i}`, destinationId } });
    const { body: set } = await api(stack.base, 'POST', at(`/shipments/${shipment.id}/sets`), { token, body: { name: 'Pallet', kind: 'Pallet' } });
    const { body: device } = await api(stack.base, 'POST', at('/devices'), { token, body: { serialNumber: `EVAL-${String(i).padStart(6, '0')}`, model: 'TempTrack T4' } });
    await api(stack.base, 'PUT', at(`/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`), { token });
    await api(stack.base, 'POST', at(`/shipments/${shipment.id}/start`), { token });
    const place = (i * 5) % config.places;
    return { shipmentId: shipment.id, deviceId: device.id, poiId: places.results[place], centre: placeAt(place), offset: Math.floor(Math.random() * CYCLE_S) };
  });
  const dms = new pg.Client({ connectionString: databaseUrl(config, names.dms) });
  await dms.connect();
  await dms.query("UPDATE assignment_periods SET assigned_at = assigned_at - interval '2 hours'");
  await dms.end();

  const devices = trackers.results;
  const eventStart = Date.now() - 3_600_000;
  /** Each tracker's next second of event time. */
  const clock = devices.map(() => 0);

  /** Per tracker: the event seconds of the arrivals seen in its readings, not yet final. */
  const arrivals = devices.map(() => []);
  function batchFor(group) {
    const readings = [];
    const decided = [];
    for (let d = group * BATCH_DEVICES; d < Math.min(devices.length, (group + 1) * BATCH_DEVICES); d++) {
      const device = devices[d];
      for (let r = 0; r < READINGS_PER_DEVICE; r++) {
        const s = clock[d]++;
        const phase = (s + device.offset) % CYCLE_S;
        const inside = phase >= 100 && phase < 160;
        const lat = device.centre.lat + (inside ? 0 : 0.05);
        readings.push({ deviceId: device.deviceId, recordedAt: new Date(eventStart + s * 1000).toISOString(), location: { lat, lng: device.centre.lng, accuracyMeters: 10 }, temperatureC: 4 });
        // An entry seen (not a tracker that starts inside); confirmed by the reading at it + dwell.
        if (phase === 100) arrivals[d].push(s);
        if (arrivals[d][0] !== undefined && s === arrivals[d][0] + DWELL_S) {
          decided.push({ shipmentId: device.shipmentId, arrivedAt: eventStart + arrivals[d].shift() * 1000 });
        }
      }
    }
    return { readings, decided };
  }

  // The feed, polled: arrivals seen, by shipment and arrivedAt.
  let after = null;
  let polling = true;
  const seen = new Map();
  const poller = (async () => {
    while (polling) {
      const query = `?type=shipment.arrived&limit=100${after ? `&after=${after}` : ''}`;
      const { body } = await api(stack.base, 'GET', at(`/events${query}`), { token });
      const now = performance.now();
      for (const event of body.items) {
        seen.set(`${event.data.shipmentId}/${Date.parse(event.data.arrivedAt)}`, now);
        after = event.id;
      }
      if (body.items.length < 100) await sleep(100);
    }
  })();

  /** The workers running now. */
  const workers = ['worker'];
  /** Over the workers: their histograms of evaluation_lag_seconds (receipt -> evaluation commit) [count, sum], restores, RSS (MB each). */
  async function workerFigures() {
    let count = 0;
    let sum = 0;
    let restores = 0;
    const rss = [];
    for (const worker of workers) {
      const text = await (await fetch(`http://127.0.0.1:${stack.ports[worker]}/metrics`)).text();
      const value = (name) => Number(text.match(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm'))?.[1] ?? 0);
      count += value('evaluation_lag_seconds_count');
      sum += value('evaluation_lag_seconds_sum');
      restores += value('evaluation_restores_total');
      rss.push(Math.round(value('process_resident_memory_bytes') / 1e6));
    }
    return { count, sum, restores, rss };
  }

  const cpu = new CpuMeter(databaseUrl(config, 'postgres'), () => stack.pids(), [names.oms]);

  async function run(seconds) {
    const load = Math.round(loadavg()[0] * 10) / 10;
    const before = await workerFigures();
    const cpuBefore = await cpu.sample();
    const lags = [];
    const batchLatencies = [];
    const pendingDecisions = [];
    let sent = 0;
    let group = 0;
    const groups = Math.ceil(devices.length / BATCH_DEVICES);
    const started = performance.now();
    const until = started + seconds * 1000;
    const interval = (BATCH_DEVICES * READINGS_PER_DEVICE * 1000) / config.rate;
    let nextAt = started;
    async function lane() {
      while (performance.now() < until) {
        const wait = nextAt - performance.now();
        nextAt = Math.max(nextAt, performance.now()) + interval;
        if (wait > 0) await sleep(wait);
        const { readings, decided } = batchFor(group++ % groups);
        const t0 = performance.now();
        await api(stack.base, 'POST', at('/readings'), { token, body: { readings } });
        const committed = performance.now();
        batchLatencies.push(committed - t0);
        sent += readings.length;
        for (const decision of decided) pendingDecisions.push({ ...decision, committed });
      }
    }
    await Promise.all(Array.from({ length: config.inFlight }, lane));
    const elapsed = (performance.now() - started) / 1000;
    // Wait for the last arrivals (up to 30 s), then match.
    const deadline = performance.now() + 30000;
    const key = (d) => `${d.shipmentId}/${d.arrivedAt}`;
    while (performance.now() < deadline && pendingDecisions.some((d) => !seen.has(key(d)))) await sleep(200);
    let missing = 0;
    for (const decision of pendingDecisions) {
      const arrived = seen.get(key(decision));
      if (arrived === undefined) missing++;
      else lags.push(arrived - decision.committed);
    }
    const after = await workerFigures();
    const perThousand = CpuMeter.perRequest(cpuBefore, await cpu.sample(), sent / 1000);
    const workerCpu = Object.entries(perThousand).filter(([name]) => name.startsWith('worker')).reduce((sum, [, ms]) => sum + ms, 0);
    const minutes = (performance.now() - started) / 60000;
    lags.sort((a, b) => a - b);
    batchLatencies.sort((a, b) => a - b);
    const pct = (values, p) => (values.length ? Math.round(values[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]) : null);
    return {
      readingsPerSecond: Math.round(sent / elapsed),
      arrivals: lags.length,
      missing,
      lagP50: pct(lags, 50),
      lagP99: pct(lags, 99),
      lagMax: lags.length ? Math.round(lags.at(-1)) : null,
      batchP99: pct(batchLatencies, 99),
      evaluationLagMean: after.count > before.count ? Math.round(((after.sum - before.sum) / (after.count - before.count)) * 1000) : null,
      restoresPerMinute: Math.round(((after.restores - before.restores) / minutes) * 10) / 10,
      rssMb: after.rss.join(' / '),
      workers: workers.length,
      workerCpuMsPer1000: Math.round(workerCpu * 10) / 10,
      omsCpuMsPer1000: perThousand.oms,
      postgresCpuMsPer1000: perThousand.postgres,
      loadAverage: load,
    };
  }

  for (let count = 1; count <= Math.max(1, config.workers); count++) {
    if (count > 1) {
      const name = `worker${count}`;
      print(`\nA worker joins (${name}); the partitions are rebalanced.`);
      stack.services.push(name);
      stack.spawnService(name, 'evaluation');
      await stack.waitUntilReady(name, performance.now());
      workers.push(name);
    }
    print(`\nWarm-up with ${count} worker(s) (${config.warmup} s)...`);
    const warmup = await run(config.warmup);
    print(`  warm-up: restores ${warmup.restoresPerMinute}/min (the handover's), lag p99 ${warmup.lagP99} ms`);
    for (let i = 1; i <= config.runs; i++) {
      if (profile && i === 1) stack.signal('SIGWINCH');
      const result = await run(config.duration);
      if (profile && i === 1) {
        stack.signal('SIGWINCH');
        await sleep(3000);
      }
      stack.assertAlive();
      results.runs.push(result);
      print(`  run ${i} (${count} worker(s)): ${result.readingsPerSecond} readings/s (batch p99 ${result.batchP99} ms), ${result.arrivals} arrivals, ` +
        `lag p50 ${result.lagP50} ms, p99 ${result.lagP99} ms, max ${result.lagMax} ms, missing ${result.missing}; ` +
        `receipt -> evaluation mean ${result.evaluationLagMean} ms; restores ${result.restoresPerMinute}/min; RSS ${result.rssMb} MB; ` +
        `CPU ms per 1000 readings: worker(s) ${result.workerCpuMsPer1000}, OMS ${result.omsCpuMsPer1000}, PostgreSQL ${result.postgresCpuMsPer1000}; load ${result.loadAverage}`);
    }
  }
  polling = false;
  await poller;
  await cpu.close();
  const keys = ['readingsPerSecond', 'arrivals', 'missing', 'lagP50', 'lagP99', 'lagMax', 'batchP99', 'evaluationLagMean', 'restoresPerMinute',
    'workerCpuMsPer1000', 'omsCpuMsPer1000', 'postgresCpuMsPer1000', 'loadAverage'];
  results.median = {};
  for (let count = 1; count <= Math.max(1, config.workers); count++) {
    const runs = results.runs.filter((r) => r.workers === count);
    const summary = Object.fromEntries(keys.map((k) => [k, median(runs.map((r) => r[k]))]));
    results.median[`${count} worker(s)`] = summary;
    print(`\nMedians with ${count} worker(s):`);
    print(table(['figure', 'value'], [
      ['ingest, readings/s (asked for)', `${summary.readingsPerSecond} (${config.rate})`],
      ['batch p99, ms', summary.batchP99],
      ['arrivals measured per run', summary.arrivals],
      ['lag confirming reading commit -> feed p50 / p99 / max, ms', `${summary.lagP50} / ${summary.lagP99} / ${summary.lagMax}`],
      ['arrivals missing after 30 s', summary.missing],
      ['receipt -> evaluation commit, mean ms (worker metric)', summary.evaluationLagMean],
      ['state restores per minute (all workers)', summary.restoresPerMinute],
      ['CPU ms per 1000 readings: worker(s) / OMS / PostgreSQL (OMS database)', `${summary.workerCpuMsPer1000} / ${summary.omsCpuMsPer1000} / ${summary.postgresCpuMsPer1000}`],
      ['load average (1 min) at the runs\' start', summary.loadAverage],
      ['workers\' RSS at the last run, MB', runs.at(-1)?.rssMb],
    ]));
  }
  writeResults('evaluation', results);
}

let exitCode = 0;
try {
  await main();
} catch (error) {
  process.stderr.write(`\nbench:evaluation failed: ${error.stack ?? error}\n`);
  exitCode = 1;
} finally {
  await stack.close();
}
process.exit(exitCode);
