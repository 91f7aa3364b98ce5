// What `npm start` (scripts/start.mjs) sets for people rather than for production: log lines and the
// evaluation's lateness bound; a module of its own so that a unit test can check it without a stack.

/**
 * The environment `npm start` gives each service beyond its own: readable log lines (`LOG_FORMAT=pretty`,
 * coloured when the terminal is) and a 30 s lateness bound, so that a visit or an alert appears half a
 * minute after a device pauses instead of ten. Anything already set is passed on as it is.
 */
export function localSettings(env, colourTerminal) {
  const settings = {
    LOG_FORMAT: env.LOG_FORMAT ?? 'pretty',
    EVALUATION_LATENESS_SECONDS: env.EVALUATION_LATENESS_SECONDS ?? '30',
  };
  if (colourTerminal && env.FORCE_COLOR === undefined && env.NO_COLOR === undefined) settings.FORCE_COLOR = '1';
  return settings;
}

/** The line `npm start` prints about the lateness bound, with the value the services were given. */
export function latenessNotice(env) {
  const seconds = localSettings(env, false).EVALUATION_LATENESS_SECONDS;
  const local = env.EVALUATION_LATENESS_SECONDS === undefined;
  return (
    `Visits, alerts and automatic transitions are decided from readings in event time: each is published once ` +
    `the shipment's devices have sent readings past the moment that confirms it, or have been silent for ${seconds} s ` +
    `(EVALUATION_LATENESS_SECONDS=${seconds}${local ? ' for npm start; 600 by default' : ''}).`
  );
}

/**
 * glibc's malloc settings for the OMS and the DMS, the two services that turn PostgreSQL rows into pages
 * and batches of tens to hundreds of KiB: keep up to 16 MiB free at the top of the heap (`trim_threshold`)
 * and take blocks up to 4 MiB from the heap rather than from mappings of their own (`mmap_threshold`).
 * By default glibc hands the heap's top back to the kernel (`brk`) as soon as about 128 KiB of it is free,
 * and the next allocation takes it back as fresh pages, each a page fault; a service that allocates and
 * frees buffers of that size in turn (pg's buffer for a batch of rows, nats.js's for a turn's replies)
 * did it for nearly every request. Under list shipments the OMS's main thread made 5 to 17 minor page
 * faults and spent 0.11 to 0.22 ms of system time per request, against none and 0.03 to 0.04 ms with these
 * settings, and its CPU per list fell from 0.35-0.48 to 0.20-0.24 ms (`node bench/threads.mjs`,
 * `BENCH_START_MALLOC=0|1` alternated, 2026-11-28 on a 2 × AMD EPYC machine; docs/operations.md, "Node
 * options and memory"). With a 4 MiB trim threshold 5 faults per request were left, with 2 MiB 15. Setting
 * the trim threshold turns off glibc's own raising of the mapping threshold, hence both. The price: each
 * keeps what it freed, 6 to 18 MiB more just after start-up and 24 to 28 after the load; the gateway, the
 * worker and the device gateway, whose buffers are small, showed no faults to save and keep glibc's
 * defaults.
 *
 * `arena_max=2`: at most two malloc arenas instead of glibc's default of eight per core. V8's helper threads
 * compile optimized code with memory from malloc, each thread in an arena of its own, and under the 16 MiB
 * trim threshold each arena kept what its thread had freed: 6 to 8 MiB in each of four arenas 9 s after
 * start-up (/proc/<pid>/smaps). Sharing two arenas, the threads reuse that memory: the OMS's memory 3 s after
 * ready fell from 151-158 to 137-147 MiB (four alternated pairs of `node bench/idle.mjs`, 2026-11-28), with
 * no change in its CPU or page faults per list (`node bench/threads.mjs`, two alternated pairs).
 *
 * The same in `npm start`, the Kubernetes manifests and docker-compose.yml (which spell it out) and the
 * benchmarks; a `GLIBC_TUNABLES` already set is passed on as it is.
 */
export const MALLOC_TUNABLES = 'glibc.malloc.trim_threshold=16777216:glibc.malloc.mmap_threshold=4194304:glibc.malloc.arena_max=2';
const MALLOC_TUNED = new Set(['oms', 'dms']);

/** The environment that gives `service` the malloc settings above (none for the others), unless `env` has its own. */
export function mallocSettings(service, env) {
  if (!MALLOC_TUNED.has(service)) return {};
  return { GLIBC_TUNABLES: env.GLIBC_TUNABLES ?? MALLOC_TUNABLES };
}

/**
 * Node options of each service, before its entry file: the same in `npm start`, the image's Kubernetes
 * manifests and docker-compose.yml (which spell them out) and the benchmarks (bench/lib/stack.mjs).
 *
 * `--no-memory-reducer` for the OMS and the DMS. V8's memory reducer gives an idle process's memory back
 * (the young generation start-up grew, old garbage), and afterwards lets the old generation grow only
 * slowly. Under load again the DMS, which turns PostgreSQL rows into pages and batches of tens of KiB, then
 * collected its old generation six to seven times a second and spent about twice the CPU per list: its
 * list devices 0.29 to 0.37 ms a request with the reducer, 0.13 to 0.20 without (about 55
 * full collections per 8 s of load against 0 to 4; docs/operations.md, "Node options and memory"). The
 * OMS did the same in some runs of `npm run bench` (0.39 to 0.47 ms per list with up to eight full
 * collections a second, 0.20 once they stopped). Without the
 * reducer the DMS keeps the memory of its busiest moment (under 190 MiB in the benchmark's runs) instead of
 * settling back to about 90 when idle. The gateway, the worker and the device gateway keep the reducer.
 *
 * `--no-allocation-site-pretenuring` for the OMS. When the objects made at one place in the code outlive
 * the young generation often enough, V8 starts allocating that place's objects straight in the old
 * generation, and does not go back. Under list shipments after the OMS had been idle a minute or more
 * (as `npm run bench` leaves it), the first seconds of load made some such place look long-lived: from
 * then on each scavenge kept 3.6 to 4.3 MB of what was allocated since the last one and promoted nearly
 * all of it, garbage that only full collections (one a second) cleared, presumably kept young by the
 * pretenured objects that point at it. The OMS's V8 helper threads then spent 0.04 to 0.06 ms per list
 * with 5 page faults, and the stack answered 2,400 to 2,700 lists a second instead of 2,750 to 3,075. It
 * happened in 18 runs of 20 after 60 or 90 s idle and in none of 5 loaded at once; with the option, in
 * none of 3 after 60 s idle (`BENCH_NODE_ARGS_OMS='--trace-gc --trace-gc-nvp' BENCH_THREADS_IDLE_MS=60000
 * node bench/threads.mjs`, 2026-11-28; docs/operations.md, "Node options and memory"). The OMS's
 * long-lived objects are few (its caches and its modules), so promoting them by copying costs nothing
 * measurable.
 *
 * `--max-semi-space-size=32` (MiB; V8's default is 16 on 64-bit machines) for the DMS and the device
 * gateway, the two processes on the path of every tracker's reading. Each holds a batch's readings and
 * every waiting device's promises for the 100 to 300 ms a batch takes: long enough, at their allocation
 * rate, to outlive two scavenges of the default young generation and be promoted, to be collected again in
 * the old generation (the likely reason; the promotions were not counted). With the larger young
 * generation, per MQTT reading, the device gateway spent 9 to 16 % less CPU, the DMS 11 to 23 % and the
 * whole path 5 to 11 % (`npm run bench:device-gateway`, alternated runs on 2026-11-28; docs/operations.md,
 * "Node options and memory"). The price: the DMS's memory 3 s after ready is about 15 MiB higher.
 *
 * `--heap-growing-percent=100` for the gateway: after each full collection V8 lets the old generation grow
 * to twice what survived before the next one, instead of up to four times (its own factor, which it
 * raises when collections are cheap). The gateway keeps about 50 MB alive, and under load some of what its
 * requests allocate is promoted (about 2 KB per list of shipments), so its old generation filled with up
 * to 150 MB of garbage and its resident memory peaked at 295 to 350 MiB (the bound is 300); with the
 * option the heap's largest point before a full collection fell from 176 to 211 MB to 113 to 114 and the
 * peak to 232 to 234 MiB, for about
 * as many full collections over a run of `npm run bench` (12 to 13 either way) and no change measured in
 * its CPU per request (two alternated pairs of `BENCH_ONLY=list,deep,get npm run bench`, 2026-11-28).
 */
export const NODE_ARGS = {
  oms: ['--no-memory-reducer', '--no-allocation-site-pretenuring'],
  dms: ['--no-memory-reducer', '--max-semi-space-size=32'],
  'device-gateway': ['--max-semi-space-size=32'],
  gateway: ['--heap-growing-percent=100'],
};
