#!/usr/bin/env node
// `npm run bench:bulk` (issue 5): a BENCH_BULK_ENTRIES-entry bulk set assignment and bulk retire, each
// timed from the POST to the first poll that sees the operation finished, BENCH_RUNS times; prints
// entries per second and time to completion (median). Runs the gateway, one OMS, one DMS and one bulk
// worker (`node apps/oms/dist/worker.js`) on databases of its own (bench_bulk_*), so that it never
// disturbs the data of `npm run bench`.
//
// Each run: BENCH_BULK_SETS new shipments with one set each; bulk-assign the run's fresh devices to
// them (spread evenly); cancel the shipments, which releases the devices; bulk-retire the same devices.
// So every entry is a real change, and a run consumes BENCH_BULK_ENTRIES devices (seeded up front).
import { readBenchConfig } from './lib/config.mjs';
import { api, inPool, issueToken } from './lib/http.mjs';
import { median } from './lib/load.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import { provision, seedDevices } from './lib/seed.mjs';
import { BenchStack, databaseNames, resetDatabases, sleep } from './lib/stack.mjs';

const FINISHED = new Set(['Succeeded', 'PartiallySucceeded', 'Failed', 'Cancelled']);
const POLL_MS = Number(process.env.BENCH_BULK_POLL_MS ?? 50);
const OPERATION_TIMEOUT_MS = 10 * 60 * 1000;

const base = readBenchConfig();
const config = {
  ...base,
  prefix: 'bench_bulk',
  entries: Number(process.env.BENCH_BULK_ENTRIES ?? 10000),
  sets: Number(process.env.BENCH_BULK_SETS ?? 200),
};
const stack = await new BenchStack(config, { services: ['oms', 'dms', 'worker', 'gateway'] }).prepare();
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config }, runs: [] };

async function main() {
  const names = databaseNames(config);
  print(`Bulk benchmark: ${config.entries} entries × ${config.runs} runs, ${config.sets} sets per run`);
  print(`Recreating the databases ${names.gateway}, ${names.oms}, ${names.dms}...`);
  await resetDatabases(config, [names.gateway, names.oms, names.dms]);
  const { credentials, readAccountId: accountId } = provision(stack);
  results.startup = await stack.start('bulk');
  await sleep(config.idleMs);
  results.idleMemory = stack.memory();
  const token = await issueToken(stack.base, credentials);

  print('Seeding devices through the API:');
  const devices = await seedDevices(stack.base, token, accountId, config.entries * config.runs, config.seedConcurrency, 'BULK');
  results.seeding = { devices: devices.results.length, seconds: devices.seconds, perSecond: devices.perSecond };

  for (let run = 0; run < config.runs; run++) {
    const deviceIds = devices.results.slice(run * config.entries, (run + 1) * config.entries);
    const context = { base: stack.base, token, accountId };
    const shipments = await createShipmentsWithSets(context, run);
    const assignments = deviceIds.map((deviceId, index) => ({ setId: shipments[index % shipments.length].setId, deviceId }));
    const assign = await timeOperation(context, '/sets/bulk-assign', { assignments });
    print(`  run ${run + 1}: bulk assign ${describe(assign)}`);
    await inPool('cancelling the shipments (releases their devices)', shipments.length, config.seedConcurrency, (index) =>
      api(stack.base, 'POST', `/v1/accounts/${accountId}/shipments/${shipments[index].shipmentId}/cancel`, { token }),
    );
    const retire = await timeOperation(context, '/devices/bulk-retire', { deviceIds });
    print(`  run ${run + 1}: bulk retire ${describe(retire)}`);
    results.runs.push({ assign, retire });
    stack.assertAlive();
  }
  results.memoryAfterLoad = stack.memory();
  results.median = {
    assign: summarize(results.runs.map((run) => run.assign)),
    retire: summarize(results.runs.map((run) => run.retire)),
  };
  printSummary();
  print(`\nAll figures: ${writeResults('bulk-latest.json', results)}`);
}

async function createShipmentsWithSets({ base, token, accountId }, run) {
  const { results: shipments } = await inPool(`run ${run + 1}: shipments with one set`, config.sets, config.seedConcurrency, async (index) => {
    const path = `/v1/accounts/${accountId}/shipments`;
    const { body: shipment } = await api(base, 'POST', path, { token, body: { name: `Bulk run ${run + 1} shipment ${index}` } });
    const { body: set } = await api(base, 'POST', `${path}/${shipment.id}/sets`, { token, body: { name: 'Pallet 1', kind: 'Pallet' } });
    return { shipmentId: shipment.id, setId: set.id };
  });
  return shipments;
}

/** POSTs a bulk request and polls its Location until the operation is finished. */
async function timeOperation({ base, token, accountId }, path, body) {
  const started = performance.now();
  const { status, headers, body: accepted } = await api(base, 'POST', `/v1/accounts/${accountId}${path}`, { token, body, expect: [202] });
  const acceptMs = Math.round(performance.now() - started);
  const location = headers.get('location');
  if (!location) throw new Error(`POST ${path} answered ${status} without a Location`);
  const deadline = Date.now() + OPERATION_TIMEOUT_MS;
  let operation = accepted;
  while (!FINISHED.has(operation?.status)) {
    if (Date.now() > deadline) throw new Error(`operation ${location} not finished after ${OPERATION_TIMEOUT_MS / 1000} s`);
    await sleep(POLL_MS);
    operation = (await api(base, 'GET', location, { token })).body;
  }
  const seconds = (performance.now() - started) / 1000;
  const { total, succeeded, failed } = operation.progress;
  const serverSeconds =
    operation.completedAt && operation.createdAt ? (Date.parse(operation.completedAt) - Date.parse(operation.createdAt)) / 1000 : undefined;
  return {
    status: operation.status,
    total,
    succeeded,
    failed,
    acceptMs,
    seconds: Math.round(seconds * 100) / 100,
    serverSeconds,
    entriesPerSecond: Math.round(total / seconds),
  };
}

function describe(result) {
  return `${result.status} ${result.succeeded}/${result.total} (${result.failed} failed) in ${result.seconds} s, ${result.entriesPerSecond} entries/s (202 after ${result.acceptMs} ms)`;
}

function summarize(runs) {
  const round = (value) => Math.round(value * 100) / 100;
  return {
    seconds: round(median(runs.map((run) => run.seconds))),
    serverSeconds: runs.every((run) => run.serverSeconds !== undefined) ? round(median(runs.map((run) => run.serverSeconds))) : undefined,
    entriesPerSecond: Math.round(median(runs.map((run) => run.entriesPerSecond))),
    acceptMs: Math.round(median(runs.map((run) => run.acceptMs))),
    allSucceeded: runs.every((run) => run.status === 'Succeeded' && run.succeeded === run.total),
  };
}

function printSummary() {
  print(`\n=== Bulk operations: median of ${config.runs} runs of ${config.entries} entries ===\n`);
  const row = (name, figures) => [
    name,
    figures.entriesPerSecond,
    figures.seconds,
    figures.serverSeconds ?? '',
    figures.acceptMs,
    figures.allSucceeded ? 'all Succeeded' : 'NOT all succeeded (see runs in the JSON)',
  ];
  print(
    table(
      ['operation', 'entries/s', 'time to completion s', 'completedAt - createdAt s', '202 after ms', 'outcome'],
      [row('bulk assign', results.median.assign), row('bulk retire', results.median.retire)],
    ),
  );
  print('\nStart-up (spawn to ready) and resident memory (MiB):\n');
  print(
    table(
      ['service', 'start ms', 'ready when', 'idle RSS', 'RSS after load', 'peak RSS'],
      Object.entries(results.startup).map(([name, startup]) => [
        name,
        startup.readyMs,
        startup.via,
        results.idleMemory[name].rssMiB,
        results.memoryAfterLoad[name].rssMiB,
        results.memoryAfterLoad[name].peakMiB,
      ]),
    ),
  );
}

let exitCode = 0;
try {
  await main();
} catch (error) {
  process.stderr.write(`\nbench:bulk failed: ${error.stack ?? error}\n`);
  exitCode = 1;
} finally {
  await stack.close();
}
process.exit(exitCode);
