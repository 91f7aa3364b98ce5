// Settings of `npm run bench` and `npm run bench:bulk`, read once from the environment. Defaults are the
// figures of issue 8; smaller values make a quick run (BENCH_DURATION=3 BENCH_SHIPMENTS=5000 ...).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const benchDir = join(root, 'bench');
export const resultsDir = join(benchDir, 'results');

function int(name, fallback, min = 1) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return Number(raw);
}

function text(name, fallback) {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? fallback : raw;
}

function prefix(value) {
  if (!/^bench(_[a-z]+)?$/.test(value)) throw new Error(`BENCH_PREFIX must be bench or bench_<lower-case letters>, got "${value}"`);
  return value;
}

export function readBenchConfig() {
  return Object.freeze({
    /** Seconds of each measured run, and of the unmeasured warm-up run before them. */
    duration: int('BENCH_DURATION', 10),
    warmup: int('BENCH_WARMUP', 3, 0),
    connections: int('BENCH_CONNECTIONS', 50),
    /** Measured runs per scenario; the table shows the median of each figure. */
    runs: int('BENCH_RUNS', 3),
    shipments: int('BENCH_SHIPMENTS', 100000),
    devices: int('BENCH_DEVICES', 10000),
    /**
     * Requests in flight while seeding through the API. Inserts into one account are serialized by its
     * insert-order lock (docs/architecture.md, Paging), so more in flight only queues longer.
     */
    seedConcurrency: int('BENCH_SEED_CONCURRENCY', 16),
    /** How long a freshly started service sits idle before its resident memory is read. */
    idleMs: int('BENCH_IDLE_MS', 3000, 0),
    /**
     * When, after ready, the stack's memory is read again, left alone in between: V8 gives back the heap
     * that start-up grew (its memory reducer, which runs only once allocation has been low for a while)
     * 30 to 65 s after start, so this is what an idle process holds; 0 skips the reading.
     */
    idleSettledMs: int('BENCH_IDLE_SETTLED_MS', 90000, 0),
    /** Only these scenarios (comma-separated names, see the table); empty runs every one. */
    only: text('BENCH_ONLY', '').split(',').filter(Boolean),
    /** Keep the databases of the previous run when they hold the same data (state in bench/results/state.json). */
    reuse: process.env.BENCH_REUSE === '1',
    logLevel: text('BENCH_LOG_LEVEL', 'info'),
    /**
     * Node options for every service's command line, before its entry file: for V8 flags that NODE_OPTIONS
     * (BENCH_NODE_OPTIONS) refuses, such as --initial-old-space-size. Split on white space.
     */
    nodeArgs: text('BENCH_NODE_ARGS', '').split(/\s+/).filter(Boolean),
    /**
     * Node options for one service only, after BENCH_NODE_ARGS: `BENCH_NODE_ARGS_OMS`, `BENCH_NODE_ARGS_DMS`,
     * `BENCH_NODE_ARGS_GATEWAY`, `BENCH_NODE_ARGS_WORKER`, `BENCH_NODE_ARGS_DEVICE_GATEWAY`.
     */
    nodeArgsOf: (service) => text(`BENCH_NODE_ARGS_${service.toUpperCase().replace('-', '_')}`, '').split(/\s+/).filter(Boolean),
    pgUrl: text('BENCH_PG_URL', 'postgres://postgres@127.0.0.1:5432'),
    natsUrl: text('BENCH_NATS_URL', 'nats://127.0.0.1:4222'),
    redisUrl: text('BENCH_REDIS_URL', 'redis://127.0.0.1:6379'),
    /**
     * Measure the read scenarios on the freshly seeded tables before they are analyzed, then ANALYZE and
     * measure everything as usual (BENCH_NEVER_ANALYZED=0 skips the first part). A reused database
     * (BENCH_REUSE=1) has been analyzed already, so it skips it too.
     */
    neverAnalyzed: process.env.BENCH_NEVER_ANALYZED !== '0',
    /**
     * Prefix of every database, NATS subject and Redis key of the benchmark: `bench`, or `bench_<letters>`
     * (BENCH_PREFIX) so that two benchmarks on one PostgreSQL do not drop each other's databases; never
     * tracking_* or trk_*.
     */
    prefix: prefix(text('BENCH_PREFIX', 'bench')),
  });
}
