#!/usr/bin/env node
// `npm run bench:fairness`: does one tenant's ingest flood slow another tenant's
// ingest? Two tenants on one stack (one gateway, one OMS, one DMS, databases bench_fair_*):
//  - tenant A sends batches of BENCH_FAIR_A_BATCH (100) readings at BENCH_FAIR_A_RATE (10) batches/s,
//    open loop (a batch leaves on schedule whether or not the previous one was answered, as a device
//    cloud's forwarders do), so A's latencies are not hidden by A waiting for itself;
//  - tenant B floods: BENCH_FAIR_B_LANES (8) lanes, each sending batches of 1000 readings one after the
//    other; a lane answered 429 waits the Retry-After delay, as a well-behaved client does.
// Phases of BENCH_FAIR_DURATION (12) seconds, each after a warm-up of BENCH_WARMUP (3) s: first B alone
// with 1, 2 and 4 lanes (BENCH_FAIR_SWEEP; empty skips it), then A alone, B alone, and A while B floods.
// Prints A's p50/p90/p99 alone and under B's flood, and B's throughput (readings/s stored), 429s and 5xx.
// The services get the benchmark's environment, so INGEST_* settings apply; to measure the capacity that
// sizes the admission, take the admission out of the way (INGEST_CAPACITY_READINGS=1000000
// INGEST_TENANT_READINGS=1000000) and read the sweep: where readings/s stops growing with more lanes.
import { readBenchConfig } from './lib/config.mjs';
import { issueToken } from './lib/http.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import { seedDevices } from './lib/seed.mjs';
import { BenchStack, databaseNames, resetDatabases, sleep } from './lib/stack.mjs';

const base = readBenchConfig();
const int = (name, fallback) => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return Number(raw);
};
const config = {
  ...base,
  prefix: 'bench_fair',
  duration: int('BENCH_FAIR_DURATION', 12),
  aBatch: int('BENCH_FAIR_A_BATCH', 100),
  aRate: int('BENCH_FAIR_A_RATE', 10),
  bBatch: int('BENCH_FAIR_B_BATCH', 1000),
  bLanes: int('BENCH_FAIR_B_LANES', 8),
  sweep: (process.env.BENCH_FAIR_SWEEP ?? '1,2,4').split(',').filter(Boolean).map(Number),
  /** Devices per tenant; a batch holds readings of `batch / 10` devices, 10 each. */
  devices: int('BENCH_FAIR_DEVICES', 200),
};
const stack = await new BenchStack(config, { services: ['oms', 'dms', 'gateway'] }).prepare();
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config }, phases: {} };

/** Event time of the next batch; each batch moves it on, so no two batches share a (device, recordedAt). */
let clock = Date.now() - 6 * 3_600_000;

function makeBatch(deviceIds, size) {
  const perDevice = 10;
  const devices = Math.max(1, Math.floor(size / perDevice));
  const first = Math.floor(Math.random() * (deviceIds.length - devices + 1));
  const start = clock;
  clock += perDevice;
  const readings = [];
  for (let d = 0; d < devices; d++) {
    for (let r = 0; r < perDevice; r++) {
      readings.push({
        deviceId: deviceIds[first + d],
        recordedAt: new Date(start + r).toISOString(),
        location: { lat: 51.9 + r / 1000, lng: 4.1 + d / 1000, accuracyMeters: 8 },
        temperatureC: 4 + r / 10,
        batteryPercent: 80,
      });
    }
  }
  return readings;
}

/** Sends one batch; returns { status, ms, accepted, retryAfter }. Any answer but 200 or 429 stops the run. */
async function send(tenant, size) {
  const body = JSON.stringify({ readings: makeBatch(tenant.deviceIds, size) });
  const t0 = performance.now();
  const response = await fetch(`${stack.base}/v1/accounts/${tenant.accountId}/readings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/json' },
    body,
  });
  const answer = await response.json();
  const ms = performance.now() - t0;
  if (response.status === 429) return { status: 429, ms, accepted: 0, retryAfter: Number(response.headers.get('retry-after') ?? 1) };
  // A 5xx (504: the DMS did not answer within RPC_TIMEOUT_MS) is counted, not fatal: it is what a flood did before the admission.
  if (response.status >= 500) return { status: response.status, ms, accepted: 0 };
  if (response.status !== 200 || answer.rejected.length > 0) throw new Error(`ingest answered ${response.status}: ${JSON.stringify(answer).slice(0, 300)}`);
  return { status: 200, ms, accepted: answer.accepted };
}

const percentile = (sorted, p) => (sorted.length === 0 ? null : Math.round(sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] * 10) / 10);

/** Tenant A: a batch every 1/aRate s for `seconds`, not waiting for answers; latencies of the 200s, count of 429s. */
async function paced(tenant, seconds) {
  const latencies = [];
  let refused = 0;
  let failed = 0;
  const pending = [];
  const interval = 1000 / config.aRate;
  const started = performance.now();
  for (let i = 0; performance.now() - started < seconds * 1000; i++) {
    pending.push(
      send(tenant, config.aBatch).then((result) => {
        if (result.status === 200) latencies.push(result.ms);
        else if (result.status === 429) refused += 1;
        else failed += 1;
      }),
    );
    const next = started + (i + 1) * interval;
    await sleep(Math.max(0, next - performance.now()));
  }
  await Promise.all(pending);
  latencies.sort((a, b) => a - b);
  return { batches: latencies.length, refused, failed, p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99) };
}

/** Tenant B: `lanes` lanes sending batches back to back for `seconds`; readings/s stored, 429s, batch latencies. */
async function flood(tenant, lanes, seconds) {
  let readings = 0;
  let refused = 0;
  let failed = 0;
  const latencies = [];
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  async function lane() {
    while (performance.now() < until) {
      const result = await send(tenant, config.bBatch);
      if (result.status === 200) {
        readings += result.accepted;
        latencies.push(result.ms);
      } else if (result.status >= 500) {
        failed += 1;
      } else {
        refused += 1;
        await sleep(Math.min(result.retryAfter * 1000, Math.max(0, until - performance.now())));
      }
    }
  }
  await Promise.all(Array.from({ length: lanes }, lane));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { lanes, perSecond: Math.round(readings / elapsed), refused, failed, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function tenant(name) {
  const { tenantId } = stack.admin('tenant', 'create', '--name', `Fairness ${name}`);
  const { accountId } = stack.admin('account', 'create', '--tenant', tenantId, '--name', `Fairness ${name}`);
  const credentials = stack.admin('application', 'create', '--tenant', tenantId, '--name', `Fairness ${name}`, '--role', 'Admin', '--accounts', accountId);
  const token = await issueToken(stack.base, { tenantId, applicationId: credentials.applicationId, applicationSecret: credentials.applicationSecret });
  const deviceIds = (await seedDevices(stack.base, token, accountId, config.devices, config.seedConcurrency, `FAIR${name}`)).results;
  return { name, tenantId, accountId, token, deviceIds };
}

async function main() {
  const names = databaseNames(config);
  print(
    `Ingest fairness: tenant A ${config.aBatch}-reading batches at ${config.aRate}/s; tenant B ${config.bLanes} lanes of ` +
      `${config.bBatch}-reading batches; phases of ${config.duration} s after ${config.warmup} s of warm-up`,
  );
  const admission = Object.fromEntries(Object.entries(process.env).filter(([key]) => key.startsWith('INGEST_')));
  results.admission = admission;
  print(`Admission settings from the environment: ${JSON.stringify(admission)} (unset: the gateway's defaults)`);
  await resetDatabases(config, [names.gateway, names.oms, names.dms]);
  results.startup = await stack.start('fairness');
  // The provisioning commands need the migrated identity database, so they run once the stack is up.
  const a = await tenant('A');
  const b = await tenant('B');

  if (config.sweep.length > 0) {
    print('\nB alone, by lanes (capacity):');
    const sweep = [];
    for (const lanes of config.sweep) {
      await flood(b, lanes, config.warmup);
      const run = await flood(b, lanes, config.duration);
      stack.assertAlive();
      sweep.push(run);
      print(`  ${lanes} lanes: ${run.perSecond} readings/s, batch p50 ${run.p50} ms, p99 ${run.p99} ms, 429s ${run.refused}, 5xx ${run.failed}`);
    }
    results.phases.sweep = sweep;
  }

  print('\nA alone:');
  await paced(a, config.warmup);
  const alone = await paced(a, config.duration);
  print(`  A: p50 ${alone.p50} ms, p90 ${alone.p90} ms, p99 ${alone.p99} ms (${alone.batches} batches, ${alone.refused} 429s, ${alone.failed} 5xx)`);

  print('\nB alone:');
  await flood(b, config.bLanes, config.warmup);
  const bAlone = await flood(b, config.bLanes, config.duration);
  print(`  B: ${bAlone.perSecond} readings/s, batch p50 ${bAlone.p50} ms, p99 ${bAlone.p99} ms, 429s ${bAlone.refused}, 5xx ${bAlone.failed}`);

  print('\nA while B floods:');
  const warm = flood(b, config.bLanes, config.warmup + config.duration + 1);
  await sleep(config.warmup * 1000);
  const contended = await paced(a, config.duration);
  const bContended = await warm;
  stack.assertAlive();
  print(`  A: p50 ${contended.p50} ms, p90 ${contended.p90} ms, p99 ${contended.p99} ms (${contended.batches} batches, ${contended.refused} 429s, ${contended.failed} 5xx)`);
  print(`  B: ${bContended.perSecond} readings/s (over warm-up and phase), batch p50 ${bContended.p50} ms, 429s ${bContended.refused}, 5xx ${bContended.failed}`);
  results.phases = { ...results.phases, aAlone: alone, bAlone, aUnderFlood: contended, bWithA: bContended };

  print('\nSummary:');
  print(
    table(
      ['phase', 'A p50 ms', 'A p90 ms', 'A p99 ms', 'A 429/5xx', 'B readings/s', 'B 429/5xx'],
      [
        ['A alone', alone.p50, alone.p90, alone.p99, `${alone.refused}/${alone.failed}`, '-', '-'],
        ['B alone', '-', '-', '-', '-', bAlone.perSecond, `${bAlone.refused}/${bAlone.failed}`],
        [
          'A while B floods',
          contended.p50,
          contended.p90,
          contended.p99,
          `${contended.refused}/${contended.failed}`,
          bContended.perSecond,
          `${bContended.refused}/${bContended.failed}`,
        ],
      ],
    ),
  );
  print(`\nAll figures: ${writeResults('fairness-latest.json', results)}`);
}

try {
  await main();
} finally {
  await stack.close();
}
await sleep(0);
