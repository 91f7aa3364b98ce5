#!/usr/bin/env node
// CPU time (user and system) and minor page faults per request of each thread of the OMS, the DMS and the
// gateway, from /proc/<pid>/task/*/stat, under list shipments and list devices: the stack as `npm run bench`
// runs it, on its seeded databases (as BENCH_REUSE=1; seeds them when they do not match). What a CPU
// profile does not show: the profiler counts a thread preempted in a system call as busy there, and sees
// neither the kernel's work on page faults nor V8's helper threads.
//   BENCH_THREADS_SCENARIOS=list,devices (default): the loads, in order, each 3 s unmeasured then BENCH_DURATION
//   BENCH_START_MALLOC=0: the OMS and the DMS with glibc's malloc defaults (scripts/start-settings.mjs, MALLOC_TUNABLES)
//   BENCH_THREADS_IDLE_MS: the stack left idle this long after it is ready, before the first load (as the
//     settled memory reading of `npm run bench` leaves it, 90000), else loaded at once
// Prints one line per process and load: its main thread, then its other threads by name.
import { readdirSync } from 'node:fs';
import { readBenchConfig } from './lib/config.mjs';
import { readStat } from './lib/cpu.mjs';
import { issueToken } from './lib/http.mjs';
import { measure } from './lib/load.mjs';
import { print } from './lib/report.mjs';
import * as scenarios from './lib/scenarios.mjs';
import { startWithData } from './lib/seed.mjs';
import { BenchStack, sleep } from './lib/stack.mjs';

const SCENARIOS = { list: scenarios.listShipments, devices: scenarios.listDevices };
const PROCESSES = ['oms', 'dms', 'gateway'];

const config = readBenchConfig();
const keys = (process.env.BENCH_THREADS_SCENARIOS ?? 'list,devices').split(',');
for (const key of keys) if (!SCENARIOS[key]) throw new Error(`BENCH_THREADS_SCENARIOS: ${key} is not one of ${Object.keys(SCENARIOS).join(', ')}`);
const stack = await new BenchStack(config, { asStarted: true, services: ['oms', 'dms', 'worker', 'gateway', 'device-gateway'] }).prepare();

/** { thread: { userMs, systemMs, minorFaults } } of a process, its threads summed by name, the main thread as `main`. */
function threads(pid) {
  const byName = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readStat(`/proc/${pid}/task/${tid}/stat`);
    if (!stat) continue; // The thread ended while we looked.
    const own = (byName[tid === String(pid) ? 'main' : stat.name] ??= { userMs: 0, systemMs: 0, minorFaults: 0 });
    own.userMs += stat.userMs;
    own.systemMs += stat.systemMs;
    own.minorFaults += stat.minorFaults;
  }
  return byName;
}

function perRequest(before, after, requests) {
  return Object.entries(after)
    .map(([name, now]) => {
      const then = before[name] ?? { userMs: 0, systemMs: 0, minorFaults: 0 };
      return { name, user: (now.userMs - then.userMs) / requests, system: (now.systemMs - then.systemMs) / requests, faults: (now.minorFaults - then.minorFaults) / requests };
    })
    .filter(({ user, system, faults }) => user + system > 0.001 || faults >= 0.1);
}

let exitCode = 0;
try {
  const data = await startWithData(stack, config, {}, { reuse: true });
  data.token = await issueToken(stack.base, data.credentials);
  const idleMs = Number(process.env.BENCH_THREADS_IDLE_MS ?? 0);
  if (idleMs > 0) {
    print(`Leaving the stack idle for ${idleMs / 1000} s...`);
    await sleep(idleMs);
  }
  for (const key of keys) {
    const scenario = SCENARIOS[key](data);
    await measure([scenario], { ...config, warmup: 0, runs: 1, duration: 3 }, () => {});
    const pids = stack.pids();
    const before = Object.fromEntries(PROCESSES.map((name) => [name, threads(pids[name])]));
    const [{ runs }] = await measure([scenario], { ...config, warmup: 0, runs: 1 }, () => {});
    print(`\n${scenario.name}: ${runs[0].rps} req/s, p99 ${runs[0].p99} ms; ms of CPU and minor page faults per request`);
    for (const name of PROCESSES) {
      const rows = perRequest(before[name], threads(pids[name]), runs[0].requests);
      print(`  ${name}: ${rows.map((row) => `${row.name} user ${row.user.toFixed(3)} system ${row.system.toFixed(3)} faults ${row.faults.toFixed(1)}`).join('; ')}`);
    }
  }
} catch (error) {
  process.stderr.write(`\nbench/threads.mjs failed: ${error.stack ?? error}\n`);
  exitCode = 1;
} finally {
  await stack.close();
}
process.exit(exitCode);
