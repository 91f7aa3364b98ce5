#!/usr/bin/env node
// `npm run bench`: seeds the benchmark data through the real stack, started as `npm start` starts it
// (every process: OMS, DMS, worker, gateway, device gateway, with npm start's settings; only the rate
// limits are lifted), measures start-up and idle memory per process, drives the gateway with autocannon
// in every scenario of issue 8 plus the public tracking route (median of BENCH_RUNS runs), and runs the
// reference on the same rows in the same run, interleaved. The read scenarios run first on the freshly
// seeded tables, never analyzed, then everything after ANALYZE. Prints tables and writes
// bench/results/latest.json. See BENCHMARKS.md for the method and bench/lib/config.mjs for the settings.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readBenchConfig, resultsDir } from './lib/config.mjs';
import { brokerPids, CpuMeter } from './lib/cpu.mjs';
import { issueToken } from './lib/http.mjs';
import { measure } from './lib/load.mjs';
import { ensureReferenceDependencies, prepareReferenceData, startReference } from './lib/reference.mjs';
import { markdown } from './lib/markdown.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import * as scenarios from './lib/scenarios.mjs';
import { prepareShareLink, startWithData } from './lib/seed.mjs';
import { analyzeDatabases, BenchStack, databaseNames, databaseUrl, memoryOf, sleep } from './lib/stack.mjs';

const config = readBenchConfig();
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config }, scenarios: {} };
/** Every process `npm start` runs, in its start order but the gateway after the services its readiness asks. */
const SERVICES = ['oms', 'dms', 'worker', 'gateway', 'device-gateway'];
const stack = await new BenchStack(config, { services: SERVICES, asStarted: true }).prepare();
let reference;
const meters = [];

async function main() {
  print(`Benchmark on ${results.machine.cpus} × ${results.machine.cpuModel}, Node ${process.version}, load average ${results.machine.loadAverageAtStart.join(' ')}`);
  print(`${config.shipments} shipments, ${config.devices} devices; runs of ${config.duration} s × ${config.runs} (+${config.warmup} s warm-up), ${config.connections} connections\n`);

  const data = await startWithData(stack, config, results, { analyze: !config.neverAnalyzed });

  print('\nRestarting the stack on the seeded databases to measure start-up and idle memory...');
  await stack.stop();
  results.startup = await stack.start('bench');
  const ready = Date.now();
  await sleep(config.idleMs);
  results.idleMemory = stack.memory();

  // The reference is prepared from PostgreSQL directly: the stack sits idle until its settled reading.
  print('Preparing the reference on a copy of the same rows...');
  results.reference = { dependencies: ensureReferenceDependencies() };
  results.reference.rows = await prepareReferenceData(config, data.readAccountId);
  reference = await startReference(config, results.reference.rows);
  results.reference.startMs = reference.startMs;
  await sleep(config.idleMs);
  results.reference.idleMemory = memoryOf(reference.child.pid);
  if (config.idleSettledMs > 0) {
    const wait = ready + config.idleSettledMs - Date.now();
    print(`Leaving the stack idle until ${config.idleSettledMs / 1000} s after it was ready (${Math.max(0, Math.round(wait / 1000))} s more)...`);
    await sleep(Math.max(0, wait));
    results.idleSettledMemory = stack.memory();
    results.reference.idleSettledMemory = memoryOf(reference.child.pid);
  }
  data.token = await issueToken(stack.base, data.credentials);
  data.shareToken = await prepareShareLink(stack.base, data.token, data.writeAccountId);

  const names = databaseNames(config);
  const maintenance = databaseUrl(config, 'postgres');
  const brokers = brokerPids();
  const stackCpu = new CpuMeter(maintenance, () => ({ ...stack.pids(), ...brokers }), [names.gateway, names.oms, names.dms]);
  const ours = meter(stackCpu);
  const theirs = meter(new CpuMeter(maintenance, () => ({ reference: reference.child.pid }), [names.reference]));
  const plan = [
    ['list', [ours(scenarios.listShipments(data)), theirs(scenarios.referenceListShipments(data, reference))]],
    ['deep', [ours(scenarios.listShipmentsDeep(data)), theirs(scenarios.referenceListShipmentsDeep(data, reference))]],
    ['get', [ours(scenarios.getShipment(data)), theirs(scenarios.referenceGetShipment(data, reference))]],
    ['devices', [ours(scenarios.listDevices(data)), theirs(scenarios.referenceListDevices(data, reference))]],
    // The reference has no such route; a consignee's page is compared with the list's ratio goal by its own figures.
    ['public', [ours(scenarios.publicTracking(data))]],
    // The first yardstick, for comparison with the figures before issue 35 (a sixth of the bytes per page).
    ['slim', [ours({ ...scenarios.listShipments(data), name: SLIM_OURS }), theirs(scenarios.referenceListShipmentsSlim(data, reference))]],
    // Writes last, and in the write account, so that the read scenarios and the reference see the seeded rows only.
    ['create', [ours(scenarios.createShipment(data))]],
    ['assign', [ours(scenarios.assignDevice(data))]],
    // Last: each token costs a scrypt hash, and the hashes still queued when a run ends would slow the next scenario.
    ['token', [ours(scenarios.tokenIssuance(data))]],
  ].filter(([key]) => config.only.length === 0 || config.only.includes(key));
  // V8 optimizes the hot paths only after thousands of calls; a short warm-up per scenario leaves the first
  // one measuring a half-warm stack. So every read path runs for a while before anything is measured.
  print(`\nWarming up the stack (${4 * config.warmup} s)...`);
  for (const build of [scenarios.listShipments, scenarios.listShipmentsDeep, scenarios.getShipment, scenarios.listDevices]) {
    await measure([build(data)], { ...config, warmup: 0, runs: 1, duration: Math.max(1, config.warmup) }, () => {});
  }
  const measureGroup = async (key, group) => {
    const settledMs = await stackCpu.waitUntilIdle();
    print(`\n${group.map((scenario) => scenario.name).join(' / ')}${settledMs > 2500 ? ` (after waiting ${settledMs} ms for the stack to idle)` : ''}`);
    const measured = await measure(group, config);
    stack.assertAlive();
    const memory = stack.memory();
    group.forEach((scenario, index) => (results.scenarios[scenario.name] = { key, ...measured[index], stackMemoryAfter: memory }));
  };
  results.neverAnalyzed = !data.analyzed;
  if (!data.analyzed) {
    // The seeded tables as a fresh database, or a big account loaded faster than autovacuum runs, has them.
    // Each against the reference in the same group (interleaved runs); the reference's tables are analyzed.
    const reads = [
      ['list', scenarios.listShipments, scenarios.referenceListShipments],
      ['deep', scenarios.listShipmentsDeep, scenarios.referenceListShipmentsDeep],
      ['get', scenarios.getShipment, scenarios.referenceGetShipment],
      ['devices', scenarios.listDevices, scenarios.referenceListDevices],
    ].filter(([key]) => config.only.length === 0 || config.only.includes(key));
    print('\nRead scenarios on the tables as seeded, never analyzed:');
    for (const [key, build, yardstick] of reads) {
      const yardstickScenario = yardstick(data, reference);
      await measureGroup(key, [ours(neverAnalyzed(build(data))), theirs({ ...yardstickScenario, name: yardstickScenario.name + BESIDE_NEVER_ANALYZED })]);
    }
    print('\nANALYZE, then every scenario:');
    await analyzeDatabases(config, [names.gateway, names.oms, names.dms]);
  }
  for (const [key, group] of plan) await measureGroup(key, group);
  results.memoryAfterLoad = stack.memory();
  results.reference.memoryAfterLoad = memoryOf(reference.child.pid);
  results.ratios = ratios(results.scenarios);
  results.finishedAt = new Date().toISOString();
  printSummary();
  print(`\nAll figures: ${writeResults('latest.json', results)}`);
  // The latest table of BENCHMARKS.md, as it is pasted there.
  writeFileSync(join(resultsDir, 'latest.md'), markdown(results));
  print(`BENCHMARKS.md's table: ${join(resultsDir, 'latest.md')}`);
}

/** The scenario, named as measured on tables never analyzed. */
function neverAnalyzed(scenario) {
  return { ...scenario, name: `${scenario.name}${NEVER_ANALYZED}` };
}

const NEVER_ANALYZED = ', never analyzed';
/** The reference (its tables analyzed) measured in the same group as our never-analyzed run. */
const BESIDE_NEVER_ANALYZED = ', beside never analyzed';
const SLIM_OURS = 'list shipments (first page), beside the slim reference';
/** Issue 35's goal for every read against the reference. */
const GOAL = { throughput: 1.0, p99: 1.5 };

/** Returns a function that attaches the CPU meter to a scenario; the meter is closed at the end. */
function meter(cpuMeter) {
  meters.push(cpuMeter);
  return (scenario) => ({ ...scenario, cpu: cpuMeter });
}

function ratios(measured) {
  const pair = (ours, theirs) => {
    const a = measured[ours]?.median;
    const b = measured[theirs]?.median;
    if (!a || !b) return undefined;
    const throughput = Math.round((a.rps / b.rps) * 100) / 100;
    const p99 = Math.round((a.p99 / b.p99) * 100) / 100;
    return {
      ours,
      theirs,
      throughput,
      p99,
      met: throughput >= GOAL.throughput && p99 <= GOAL.p99,
      // Less disturbed by other load on the machine than the two above.
      cpuPerRequest: a.cpuMsPerRequest && b.cpuMsPerRequest ? Math.round((a.cpuMsPerRequest.total / b.cpuMsPerRequest.total) * 10) / 10 : undefined,
    };
  };
  const reads = [
    ['list shipments (first page)', 'reference: list shipments (first page)'],
    ['list shipments (deep pages)', 'reference: list shipments (deep pages)'],
    ['get one shipment', 'reference: get one shipment'],
    ['list devices (first page)', 'reference: list devices (first page)'],
  ];
  const entries = [
    ...reads.map(([ours, theirs]) => [ours, pair(ours, theirs)]),
    ...reads.map(([ours, theirs]) => [ours + NEVER_ANALYZED, pair(ours + NEVER_ANALYZED, theirs + BESIDE_NEVER_ANALYZED)]),
    ['list shipments (first page) against the slim reference', pair(SLIM_OURS, 'reference (slim body): list shipments (first page)')],
  ];
  return { goal: GOAL, reference: Object.fromEntries(entries.filter(([, ratio]) => ratio)) };
}

function printSummary() {
  print(`\n=== Results: median of ${config.runs} runs of ${config.duration} s, ${config.connections} connections ===\n`);
  const rows = Object.entries(results.scenarios).map(([name, { median, runs }]) => [
    name,
    median.rps,
    median.p50,
    median.p99,
    median.non2xx + median.errors === 0 ? 'ok' : `${median.non2xx} non-2xx, ${median.errors} errors`,
    runs.map((run) => run.rps).join(' / '),
    median.cpuMsPerRequest?.total,
    cpuParts(median.cpuMsPerRequest),
    median.ioCallsPerRequest?.total,
  ]);
  print(table(['scenario', 'req/s', 'p50 ms', 'p99 ms', 'answers', 'req/s per run', 'CPU ms/req', 'of which', 'I/O calls/req'], rows));
  const loads = Object.values(results.scenarios).flatMap(({ runs }) => runs.map((run) => run.loadAverage));
  print(`(load average at the start of the runs: ${Math.min(...loads)} to ${Math.max(...loads)} on ${results.machine.cpus} cores; CPU ms/req counts the server processes, their PostgreSQL backends and, for our stack, the NATS and Redis servers; not the load generator; I/O calls/req: their read and write system calls per request)`);

  print(`\nAgainst the reference in the same run (goal: throughput >= ${GOAL.throughput} x, p99 <= ${GOAL.p99} x):\n`);
  print(
    table(
      ['read', 'throughput ×', 'p99 ×', 'CPU/request ×', 'goal'],
      Object.entries(results.ratios.reference).map(([name, ratio]) => [name, ratio.throughput, ratio.p99, ratio.cpuPerRequest, ratio.met ? 'met' : 'NOT met']),
    ),
  );

  print('\nStart-up (spawn to ready, services started one after another) and resident memory (MiB):\n');
  const memoryRows = Object.entries(results.startup).map(([name, startup]) => [
    name,
    results.coldStartup?.[name]?.readyMs,
    startup.readyMs,
    startup.via,
    results.idleMemory[name].rssMiB,
    results.idleSettledMemory?.[name]?.rssMiB ?? '',
    results.memoryAfterLoad?.[name]?.rssMiB,
    results.memoryAfterLoad?.[name]?.peakMiB,
  ]);
  memoryRows.push([
    'reference',
    '',
    results.reference.startMs,
    'first stdout line',
    results.reference.idleMemory.rssMiB,
    results.reference.idleSettledMemory?.rssMiB ?? '',
    results.reference.memoryAfterLoad?.rssMiB,
    results.reference.memoryAfterLoad?.peakMiB,
  ]);
  print(table(['service', 'first start ms', 'start ms', 'ready when', 'idle RSS', 'idle RSS, settled', 'RSS after load', 'peak RSS'], memoryRows));
  if (results.startup.gateway?.listeningMs !== undefined) {
    print(`(the gateway listened after ${results.startup.gateway.listeningMs} ms; "first start" migrates empty databases)`);
  }
  if (results.seeding && !results.seeding.reused) {
    const { shipments, devices } = results.seeding;
    print(`\nSeeding: ${shipments.count} shipments in ${shipments.seconds} s (${shipments.perSecond}/s), ${devices.count} devices in ${devices.seconds} s (${devices.perSecond}/s), ${results.seeding.concurrency} requests in flight`);
  }
}

function cpuParts(cpu) {
  if (!cpu) return '';
  const short = { gateway: 'gw', reference: 'ref', postgres: 'pg' };
  return Object.entries(cpu)
    .filter(([part]) => part !== 'total')
    .map(([part, ms]) => `${short[part] ?? part} ${ms}`)
    .join(', ');
}

let exitCode = 0;
try {
  await main();
} catch (error) {
  process.stderr.write(`\nbench failed: ${error.stack ?? error}\n(service logs in ${join(resultsDir, 'logs')})\n`);
  exitCode = 1;
} finally {
  await reference?.stop();
  await Promise.all(meters.map((cpuMeter) => cpuMeter.close().catch(() => {})));
  await stack.close();
}
process.exit(exitCode);
