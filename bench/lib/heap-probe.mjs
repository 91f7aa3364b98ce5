// A preload (`node --expose-gc --import ./bench/lib/heap-probe.mjs ...`, as bench/idle.mjs passes it through
// BENCH_NODE_ARGS): on SIGUSR2 the process appends to BENCH_HEAP_PROBE_FILE one line of its resident memory
// (anonymous and file-backed), V8's heap by space (used and committed MB) and external memory; with
// BENCH_HEAP_PROBE_GC=1, the same again after two full collections, to tell live objects from garbage. Off by
// default: a forced collection also wakes V8's memory reducer, which then shrinks the heap seconds later,
// so the readings after it no longer show what the process would hold by itself.
import { appendFileSync, readFileSync } from 'node:fs';
import v8 from 'node:v8';

const file = process.env.BENCH_HEAP_PROBE_FILE ?? '/tmp/heap-probe.jsonl';
const collect = process.env.BENCH_HEAP_PROBE_GC === '1';
const mb = (bytes) => Math.round(bytes / 1e5) / 10;

function resident() {
  const status = readFileSync('/proc/self/status', 'utf8');
  const mib = (field) => Math.round(Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 102.4) / 10;
  return { rssMiB: mib('VmRSS'), anonMiB: mib('RssAnon'), fileMiB: mib('RssFile') };
}

function snapshot() {
  const { heapUsed, heapTotal, external } = process.memoryUsage();
  const spaces = Object.fromEntries(
    v8
      .getHeapSpaceStatistics()
      .filter((space) => space.space_size > 0)
      .map((space) => [space.space_name, { used: mb(space.space_used_size), committed: mb(space.space_size) }]),
  );
  return { ...resident(), heapUsed: mb(heapUsed), heapTotal: mb(heapTotal), external: mb(external), spaces };
}

process.on('SIGUSR2', () => {
  const line = { pid: process.pid, uptimeS: Math.round(process.uptime() * 10) / 10, now: snapshot() };
  if (collect) {
    globalThis.gc?.();
    globalThis.gc?.();
    line.afterTwoFullCollections = snapshot();
  }
  appendFileSync(file, `${JSON.stringify(line)}\n`);
});
