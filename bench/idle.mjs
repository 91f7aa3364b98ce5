#!/usr/bin/env node
// `node bench/idle.mjs` after `npm run build` and one `npm run bench` with the same BENCH_PREFIX (it needs
// the seeded databases): starts every process as `npm run bench` does and prints each one's VmRSS
// BENCH_IDLE_MS (3 s) after it is ready, as `npm run bench` reads idle memory, then, at each of
// BENCH_IDLE_LATER_MS (a comma list of ms after ready), the gateway's (`rssMiB`) and every process's
// (`allMiB`). A run takes seconds to a minute or two, not the minutes of a whole bench, so two builds can be
// compared in alternating runs. With BENCH_NODE_ARGS="--expose-gc --import
// ./bench/lib/heap-probe.mjs" the gateway also writes its heap figures at each later reading (heap-probe.mjs;
// BENCH_HEAP_PROBE_GC=1 adds them after two full collections).
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { readBenchConfig } from './lib/config.mjs';
import { BenchStack, memoryOf, sleep } from './lib/stack.mjs';

const SERVICES = ['oms', 'dms', 'worker', 'gateway', 'device-gateway'];
const PROBE_FILE = process.env.BENCH_HEAP_PROBE_FILE ?? '/tmp/heap-probe.jsonl';
const config = readBenchConfig();
const later = (process.env.BENCH_IDLE_LATER_MS ?? '').split(',').filter(Boolean).map(Number);
// Without the preload SIGUSR2 would end the gateway (Node's default action).
const probing = config.nodeArgs.some((arg) => arg.includes('heap-probe'));
const stack = await new BenchStack(config, { services: SERVICES, asStarted: true }).prepare();
const loadAverage = Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
try {
  const startup = await stack.start('idle');
  const ready = Date.now();
  await sleep(config.idleMs);
  const idle = Object.fromEntries(Object.entries(stack.memory()).map(([name, { rssMiB }]) => [name, rssMiB]));
  const gateway = stack.children.get('gateway');
  rmSync(PROBE_FILE, { force: true });
  const gatewayLater = [];
  for (const ms of later) {
    await sleep(Math.max(0, ready + ms - Date.now()));
    if (probing) gateway.kill('SIGUSR2');
    gatewayLater.push({ ms, rssMiB: memoryOf(gateway.pid).rssMiB, allMiB: Object.fromEntries(Object.entries(stack.memory()).map(([name, { rssMiB }]) => [name, rssMiB])) });
  }
  // heap-probe.mjs writes on the signal, outside of this process's control: give it a moment.
  if (probing && later.length > 0) await sleep(1000);
  const heap = existsSync(PROBE_FILE) ? readFileSync(PROBE_FILE, 'utf8').trim().split('\n').map((line) => JSON.parse(line)) : undefined;
  const gatewayReadyMs = startup.gateway.readyMs;
  console.log(JSON.stringify({ at: new Date().toISOString(), loadAverage, gatewayReadyMs, idleMiB: idle, gatewayLater, heap }));
} finally {
  await stack.close();
}
