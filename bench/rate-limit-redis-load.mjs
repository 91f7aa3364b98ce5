#!/usr/bin/env node
// How often the rate limiter would fail open when the machine is busy, and what the gateway does about it
// (issue 32: "rate limiting was not enforced because Redis answered slower than its 250 ms timeout").
// A redis-server of its own (port BENCH_REDIS_PORT, 47379), the GCRA script the gateway sends, at
// BENCH_RATE decisions a second (open loop) for BENCH_SECONDS per phase, twice: as the machine is ("as is")
// with BENCH_HOGS busy-looping processes on top ("busy"), and with Redis stopped (SIGSTOP) for
// BENCH_STALL_MS every 2 s ("stalls": what a loaded scheduler does to a single-threaded server, made
// repeatable). Per phase:
// 1. raw: the script's round trips through ioredis (auto-pipelined, as the gateway sends them) without a
//    timeout: latency percentiles and the share slower than 250 ms and 1000 ms, i.e. the requests the
//    old limiter let through unlimited with REDIS_COMMAND_TIMEOUT_MS at 250 (or would have at 1000);
// 2. limiter: the gateway's RateLimiter (apps/gateway/dist) with REDIS_COMMAND_TIMEOUT_MS=250: how many
//    decisions it made alone (local buckets), how many requests passed unlimited (none: it no longer fails
//    open), the latency of a decision, and its accuracy for one client far over `100/1s burst 20`
//    (accepted against rate × elapsed + burst; the rest of the load counts under other subjects).
//   npm run -s build && node bench/rate-limit-redis-load.mjs
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { defineGcra } from '../apps/gateway/dist/protection/rate-limit/gcra.script.js';
import { RateLimiter } from '../apps/gateway/dist/protection/rate-limit/rate-limiter.service.js';
import { ProtectionMetrics } from '../apps/gateway/dist/protection/protection.metrics.js';
import { SharedRedis } from '../apps/gateway/dist/protection/redis/shared-redis.js';
import { table } from './lib/report.mjs';

const PORT = Number(process.env.BENCH_REDIS_PORT ?? 47379);
const HOGS = Number(process.env.BENCH_HOGS ?? 4);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RATE = Number(process.env.BENCH_RATE ?? 5000);
const TIMEOUT_MS = 250;
const STALL_MS = Number(process.env.BENCH_STALL_MS ?? 400);
const SUBJECTS = 200;
const LIMIT = { quota: 100, windowSeconds: 1, burst: 20 };
const silent = { warn() {}, info() {}, error() {}, debug() {} };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted, p) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);
const load = () => loadavg().map((value) => value.toFixed(2)).join(' ');

async function startRedis() {
  const child = spawn('redis-server', ['--port', String(PORT), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => String(chunk).includes('Ready to accept connections') && resolve());
    child.on('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
  });
  return child;
}

/** Stops redis-server for STALL_MS every 2 s until `stop` is called. */
function startStalls(server) {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await sleep(2000 - STALL_MS);
      if (stopped) break;
      server.kill('SIGSTOP');
      await sleep(STALL_MS);
      server.kill('SIGCONT');
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    server.kill('SIGCONT');
  };
}

function startHogs(count) {
  return Array.from({ length: count }, () => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
}

/**
 * Offers `once` at RATE calls a second for SECONDS, open loop (arrivals do not wait for answers, as
 * clients of a gateway do not); returns the sorted latencies in ms.
 */
async function drive(once) {
  const latencies = [];
  const pending = [];
  const started = performance.now();
  let sent = 0;
  while (performance.now() - started < SECONDS * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * RATE);
    for (; sent < due; sent++) {
      const at = performance.now();
      pending.push(Promise.resolve(once(sent)).then(() => latencies.push(performance.now() - at)));
    }
    await sleep(5);
  }
  await Promise.all(pending);
  return latencies.sort((a, b) => a - b);
}

async function raw(prefix) {
  const client = new Redis({ port: PORT, enableAutoPipelining: true, maxRetriesPerRequest: 0 });
  defineGcra(client);
  const interval = Math.round((LIMIT.windowSeconds * 1_000_000) / LIMIT.quota);
  const latencies = await drive((i) => client.gcra(1, `${prefix}:raw:${i % SUBJECTS}`, interval, LIMIT.burst, 1, 'charge'));
  client.disconnect();
  const over = (ms) => latencies.filter((value) => value > ms).length;
  return { count: latencies.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) ?? 0, over250: over(250), over1000: over(1000) };
}

async function limiter(prefix) {
  const config = { REDIS_URL: `redis://127.0.0.1:${PORT}`, REDIS_KEY_PREFIX: `${prefix}:`, REDIS_COMMAND_TIMEOUT_MS: TIMEOUT_MS };
  const redis = new SharedRedis(config, silent);
  await redis.onModuleInit();
  const metrics = new ProtectionMetrics();
  const rateLimiter = new RateLimiter(redis, metrics, silent, config);
  const policy = { name: 'application', limit: LIMIT };
  let heavyAccepted = 0;
  let unlimited = 0;
  const started = performance.now();
  // One request in 5 is one client's, far over its limit; the others spread over SUBJECTS, each within its limit.
  const latencies = await drive(async (i) => {
    const heavy = i % 5 === 0;
    const decision = await rateLimiter.consume(policy, heavy ? 'heavy' : `s${i % SUBJECTS}`);
    if (decision === undefined) unlimited++;
    else if (heavy && decision.allowed) heavyAccepted++;
  });
  const elapsed = (performance.now() - started) / 1000;
  const sum = async (counter) => (await counter.get()).values.reduce((total, value) => total + value.value, 0);
  const result = {
    count: latencies.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies.at(-1) ?? 0,
    local: await sum(metrics.rateLimitLocal),
    failures: await sum(metrics.redisFailures),
    unlimited,
    heavyAccepted,
    heavyAllowed: LIMIT.quota * elapsed + LIMIT.burst,
  };
  redis.onApplicationShutdown();
  return result;
}

const redisServer = await startRedis();
const rows = [];
try {
  for (const phase of ['as is', 'busy', 'stalls']) {
    const hogs = phase === 'busy' ? startHogs(HOGS) : [];
    const stopStalls = phase === 'stalls' ? startStalls(redisServer) : async () => undefined;
    try {
      if (hogs.length > 0) await sleep(1000);
      const prefix = `bench-rl-${Date.now()}`;
      const loadBefore = load();
      const r = await raw(prefix);
      const l = await limiter(prefix);
      const ms = (value) => Math.round(value * 10) / 10;
      rows.push([phase, loadBefore, r.count, ms(r.p50), ms(r.p99), ms(r.max), `${r.over250} (${((100 * r.over250) / r.count).toFixed(2)} %)`, r.over1000]);
      rows.push([
        `${phase}, limiter`,
        load(),
        l.count,
        ms(l.p50),
        ms(l.p99),
        ms(l.max),
        `local ${l.local}, failures ${l.failures}, unlimited ${l.unlimited}`,
        `heavy ${l.heavyAccepted}/${l.heavyAllowed.toFixed(0)}`,
      ]);
    } finally {
      for (const hog of hogs) hog.kill('SIGKILL');
      await stopStalls();
    }
  }
} finally {
  redisServer.kill('SIGKILL');
}
console.log(`rate limiter and a busy Redis: ${RATE} decisions/s offered, ${SECONDS} s per phase, ${HOGS} hogs when busy, ${STALL_MS} ms stalls every 2 s, timeout ${TIMEOUT_MS} ms`);
console.log(table(['phase', 'load avg (1/5/15)', 'commands', 'p50 ms', 'p99 ms', 'max ms', '> 250 ms (failed open before) / limiter: decided alone', '> 1000 ms / limiter: heavy client accepted of allowed'], rows));
