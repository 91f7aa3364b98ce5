// The stack under test, as child processes: one gateway, one OMS replica, one DMS replica (and, for
// `npm run bench` and some others, the worker and the device gateway), each `node apps/<app>/dist/<entry>.js`,
// on databases, a NATS subject prefix and a Redis key prefix of the benchmark's own. With `asStarted`
// (`npm run bench`) each process gets what `npm start` gives it (scripts/start.mjs: scripts/start-settings.mjs
// and start-webhooks.mjs, no NODE_ENV); otherwise the environment of the Docker image (NODE_ENV=production).
// Both give each service the Node options of `NODE_ARGS` (scripts/start-settings.mjs), which `npm start`, the
// Kubernetes manifests and docker-compose.yml give it (BENCH_START_NODE_ARGS=0: V8's defaults). Neither
// passes --enable-source-maps: each entry file maps its own stack traces (libs/core/src/source-maps.ts).
import { spawn, execFileSync } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import { resultsDir, root } from './config.mjs';
import { localSettings, mallocSettings, NODE_ARGS } from '../../scripts/start-settings.mjs';
import { webhookSettings } from '../../scripts/start-webhooks.mjs';

const ENTRIES = {
  gateway: 'apps/gateway/dist/main.js',
  oms: 'apps/oms/dist/main.js',
  dms: 'apps/dms/dist/main.js',
  worker: 'apps/oms/dist/worker.js',
  'device-gateway': 'apps/device-gateway/dist/main.js',
  // A second worker (bench:evaluation with BENCH_EVAL_WORKERS=2): the evaluation's partitions are shared.
  worker2: 'apps/oms/dist/worker.js',
};
const ADMIN_CLI = 'apps/gateway/dist/cli/admin.js';
const PROFILER_PRELOAD = pathToFileURL(join(root, 'bench', 'lib', 'profiler-preload.mjs')).href;
/** Until every process serves /health/ready on OPS_PORT (issue 7), the worker says it is ready in its log. */
const READY_LOG_LINE = { worker: /"msg":"worker started"/, worker2: /"msg":"worker started"/ };
const RATE_LIMITS = ['RATE_LIMIT_APPLICATION', 'RATE_LIMIT_ADDRESS', 'RATE_LIMIT_TOKEN_FAILURES', 'RATE_LIMIT_TOKEN_ADDRESS', 'RATE_LIMIT_READINGS', 'DEVICE_RATE_LIMIT', 'RATE_LIMIT_PUBLIC_TRACKING'];
const UNLIMITED = '1000000/1s burst 1000000';
const READY_TIMEOUT_MS = 120000;
const POLL_MS = 50;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The benchmark's database names: `bench_<service>`, never those of `npm start` (tracking_*) or tests (trk_*). */
export function databaseNames(config) {
  return {
    gateway: `${config.prefix}_gateway`,
    oms: `${config.prefix}_oms`,
    dms: `${config.prefix}_dms`,
    reference: `${config.prefix}_reference`,
  };
}

export function databaseUrl(config, name) {
  const url = new URL(config.pgUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops (closing their connections) and recreates empty the given databases. */
export async function resetDatabases(config, names) {
  const client = new pg.Client({ connectionString: databaseUrl(config, 'postgres') });
  await client.connect();
  try {
    for (const name of names) {
      if (!/^bench_[a-z_]+$/.test(name)) throw new Error(`refusing to drop ${name}: not a benchmark database`);
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.query(`CREATE DATABASE "${name}"`);
    }
  } finally {
    await client.end();
  }
}

/**
 * ANALYZE, as autovacuum would after a bulk load. The PostgreSQL of the development machines runs with
 * autovacuum off; without statistics the planner takes an account of 100000 shipments for a few rows
 * and sorts all of them for every page instead of reading 51 from the (account_id, seq) index.
 */
export async function analyzeDatabases(config, names) {
  for (const name of names) {
    const client = new pg.Client({ connectionString: databaseUrl(config, name) });
    await client.connect();
    try {
      await client.query('ANALYZE');
    } finally {
      await client.end();
    }
  }
}

/** A TCP port that was free a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** VmRSS (resident now) and VmHWM (peak resident) of a process, in MiB. */
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMiB: round(kib('VmRSS') / 1024), peakMiB: round(kib('VmHWM') / 1024) };
}

const round = (value, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

export class BenchStack {
  /**
   * @param config from readBenchConfig()
   * @param options.services which processes to run, in start order (the gateway last: its readiness needs the others)
   * @param options.profile start every service with the CPU-profiler preload (see profiler-preload.mjs)
   */
  constructor(config, { services = ['oms', 'dms', 'gateway'], profile = false, asStarted = false, runId = randomUUID().slice(0, 8) } = {}) {
    this.config = config;
    this.services = services;
    this.asStarted = asStarted;
    this.profile = profile;
    this.runId = runId;
    this.children = new Map();
    this.ports = {};
    this.logDir = join(resultsDir, 'logs');
    this.profileDir = join(resultsDir, 'profiles');
    mkdirSync(this.logDir, { recursive: true });
  }

  /** Ports and prefixes are chosen once, so a restarted stack keeps its address and its NATS/Redis names. */
  async prepare() {
    this.ports.http = await freePort();
    for (const name of ['gateway', 'oms', 'dms', 'worker', 'worker2', 'device-gateway']) this.ports[name] = await freePort();
    this.ports.deviceHttp = await freePort();
    this.ports.deviceMqtt = await freePort();
    const databases = databaseNames(this.config);
    const { NODE_ENV: _nodeEnv, NODE_OPTIONS: _nodeOptions, ...inherited } = process.env;
    const how = this.asStarted
      ? {
          // As `npm start` (scripts/start.mjs) runs each service; BENCH_NODE_ENV and BENCH_NODE_OPTIONS add to it.
          ...(process.env.BENCH_NODE_ENV ? { NODE_ENV: process.env.BENCH_NODE_ENV } : {}),
          ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
          OPS_HOST: '127.0.0.1',
          ...webhookSettings(inherited),
          // Its log lines as a non-terminal gets them (pretty, no colour): the benchmark writes them to files.
          ...localSettings(inherited, false),
        }
      : {
          // As in the Docker image.
          NODE_ENV: process.env.BENCH_NODE_ENV ?? 'production',
          ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
        };
    this.env = {
      ...inherited,
      ...how,
      LOG_LEVEL: this.config.logLevel,
      HOST: '127.0.0.1',
      PORT: String(this.ports.http),
      // The device gateway's HTTP and MQTT listeners; its other listeners on free ports the benchmark does not use.
      DEVICE_HTTP_PORT: String(this.ports.deviceHttp),
      DEVICE_MQTT_PORT: String(this.ports.deviceMqtt),
      DEVICE_MQTTS_PORT: '0',
      DEVICE_TELTONIKA_PORT: '0',
      GATEWAY_DATABASE_URL: databaseUrl(this.config, databases.gateway),
      OMS_DATABASE_URL: databaseUrl(this.config, databases.oms),
      DMS_DATABASE_URL: databaseUrl(this.config, databases.dms),
      NATS_URL: this.config.natsUrl,
      NATS_SUBJECT_PREFIX: `${this.config.prefix}.${this.runId}.`,
      REDIS_URL: this.config.redisUrl,
      REDIS_KEY_PREFIX: `${this.config.prefix}:${this.runId}:`,
      CURSOR_SECRET: 'benchmark-cursor-secret-not-for-production-use',
      // The same for every run of one prefix, so that BENCH_REUSE=1 can open the signing keys the seeding run stored.
      KEY_ENCRYPTION_KEYS: `bench:${createHash('sha256').update(`benchmark key-encryption key ${this.config.prefix}`).digest('base64')}`,
      // The limiter runs (its Redis round trip is part of every request) but never refuses: the
      // benchmark measures how fast the stack answers, not the configured quotas. Set any of these
      // in the environment to measure with other limits.
      ...Object.fromEntries(RATE_LIMITS.map((name) => [name, process.env[name] ?? UNLIMITED])),
      // The gateway closes a connection after 1000 requests (Connection: close on the last answer); autocannon
      // does not honour that and keeps sending on it, and Node answers each of those with a bare 503. At
      // 5000 req/s on 50 connections every connection reached the limit within 10 s, so that most requests
      // of a run were such 503s. The reference has no such limit either.
      HTTP_MAX_REQUESTS_PER_SOCKET: process.env.HTTP_MAX_REQUESTS_PER_SOCKET ?? '0',
    };
    this.base = `http://127.0.0.1:${this.ports.http}`;
    this.nats = await connect({ servers: this.config.natsUrl.split(','), name: 'bench' });
    return this;
  }

  /** Runs the admin command line against the benchmark's identity database; returns its JSON output. */
  admin(...args) {
    const out = execFileSync(process.execPath, [join(root, ADMIN_CLI), ...args], {
      cwd: root,
      env: { ...this.env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    return JSON.parse(out.toString());
  }

  /**
   * Starts the services one after another and measures each from spawn to ready, so that no start-up
   * competes with another for the two cores. Returns { <service>: { readyMs, via, listeningMs? } }.
   */
  async start(label) {
    const startup = {};
    for (const name of this.services) {
      const spawnedAt = performance.now();
      this.spawnService(name, label);
      startup[name] = await this.waitUntilReady(name, spawnedAt);
    }
    return startup;
  }

  spawnService(name, label) {
    // The Node options `npm start` and the manifests pass (NODE_ARGS, scripts/start-settings.mjs) unless
    // BENCH_START_NODE_ARGS is 0 (to measure against V8's defaults); BENCH_NODE_ARGS adds some, to every
    // service, and BENCH_NODE_ARGS_<SERVICE> to one.
    const startArgs = process.env.BENCH_START_NODE_ARGS !== '0' ? (NODE_ARGS[name] ?? []) : [];
    const args = [...startArgs, ...this.config.nodeArgs, ...this.config.nodeArgsOf(name)];
    if (this.profile) args.push('--import', PROFILER_PRELOAD);
    args.push(join(root, ENTRIES[name]));
    const env = {
      ...this.env,
      // The malloc settings `npm start` and the manifests give the OMS and the DMS (MALLOC_TUNABLES,
      // scripts/start-settings.mjs) unless BENCH_START_MALLOC is 0, to measure against glibc's defaults.
      ...(process.env.BENCH_START_MALLOC !== '0' ? mallocSettings(name, this.env) : {}),
      OPS_PORT: String(this.ports[name]),
      ...(this.profile ? { BENCH_PROFILE_DIR: this.profileDir, BENCH_PROFILE_NAME: name } : {}),
    };
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = createWriteStream(join(this.logDir, `${label}-${name}.log`));
    child.stdout.pipe(log);
    child.stderr.pipe(log);
    if (READY_LOG_LINE[name]) {
      // Never closed: closing a readline interface pauses its input, which would stop the log pipe too.
      createInterface({ input: child.stdout }).on('line', (line) => {
        if (READY_LOG_LINE[name].test(line)) child.loggedReady = true;
      });
    }
    child.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.once('exit', (code, signal) => {
      if (!this.stopping) {
        process.stderr.write(`\n${name} exited unexpectedly (${signal ?? `code ${code}`}); see ${join(this.logDir, `${label}-${name}.log`)}\n`);
        child.failed = true;
      }
    });
    this.children.set(name, child);
  }

  /**
   * The gateway is ready when its /health/ready answers 200 (database, NATS, OMS and DMS); it is
   * listening when /health/live does. The OMS, DMS and worker are ready when their ops port's
   * /health/ready answers 200 (issue 7) or, for the OMS and DMS, when they answer their NATS ping, which
   * is what the gateway's readiness asks them, and for the worker when it logs that it consumes the
   * queue; whichever comes first.
   */
  async waitUntilReady(name, spawnedAt) {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    const elapsed = () => Math.round(performance.now() - spawnedAt);
    const result = {};
    while (Date.now() < deadline) {
      if (this.children.get(name).failed) throw new Error(`${name} exited during start-up`);
      if (name === 'gateway') {
        if (result.listeningMs === undefined && (await httpOk(`${this.base}/health/live`))) result.listeningMs = elapsed();
        if (await httpOk(`${this.base}/health/ready`)) return { ...result, readyMs: elapsed(), via: 'GET /health/ready' };
      } else {
        if (await httpOk(`http://127.0.0.1:${this.ports[name]}/health/ready`)) {
          return { readyMs: elapsed(), via: `ops port /health/ready` };
        }
        if ((name === 'oms' || name === 'dms') && (await this.pings(name))) return { readyMs: elapsed(), via: `NATS ${name}.ping` };
        if (this.children.get(name).loggedReady) return { readyMs: elapsed(), via: 'its "ready" log line' };
      }
      await sleep(POLL_MS);
    }
    throw new Error(`${name} was not ready within ${READY_TIMEOUT_MS / 1000} s`);
  }

  /** One request in the packet format of Nest's NATS transport, as the gateway's readiness sends it. */
  async pings(service) {
    const subject = `${service}.ping`;
    try {
      const reply = await this.nats.request(
        this.env.NATS_SUBJECT_PREFIX + subject,
        JSON.stringify({ pattern: subject, data: {}, id: randomUUID() }),
        { timeout: 1000 },
      );
      return JSON.parse(Buffer.from(reply.data).toString()).response?.status === 'ok';
    } catch {
      return false;
    }
  }

  /** Resident memory of every running service. */
  memory() {
    return Object.fromEntries([...this.children].map(([name, child]) => [name, memoryOf(child.pid)]));
  }

  pids() {
    return Object.fromEntries([...this.children].map(([name, child]) => [name, child.pid]));
  }

  /** Sends a signal to every service (the profiler preload listens for SIGWINCH). */
  signal(signal) {
    for (const child of this.children.values()) child.kill(signal);
  }

  assertAlive() {
    for (const [name, child] of this.children) {
      if (child.failed || child.exitCode !== null) throw new Error(`${name} is not running any more`);
    }
  }

  /** SIGTERM, then SIGKILL after 15 s; the gateway first, so nothing calls a service that is gone. */
  async stop() {
    this.stopping = true;
    for (const name of [...this.services].reverse()) {
      const child = this.children.get(name);
      if (!child || child.exitCode !== null || child.signalCode !== null) continue;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15000);
      await child.exited;
      clearTimeout(timer);
    }
    this.children.clear();
    this.stopping = false;
  }

  /** Stops the services, deletes the run's JetStream streams, closes the NATS connection and deletes the run's Redis keys. */
  async close() {
    await this.stop();
    if (this.nats) await deleteStreams(this.nats, this.env.NATS_SUBJECT_PREFIX);
    await this.nats?.close();
    await deleteRedisKeys(this.config.redisUrl, this.env?.REDIS_KEY_PREFIX);
  }
}

async function httpOk(url) {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

/** Deletes the JetStream streams whose subjects are all under the run's prefix (events, readings). */
async function deleteStreams(nats, prefix) {
  try {
    const manager = await jetstreamManager(nats);
    for await (const stream of manager.streams.list()) {
      const subjects = stream.config.subjects ?? [];
      if (subjects.length > 0 && subjects.every((subject) => subject.startsWith(prefix))) await manager.streams.delete(stream.config.name);
    }
  } catch (error) {
    process.stderr.write(`could not delete the JetStream streams of ${prefix}*: ${error.message}\n`);
  }
}

/** Deletes every key under the run's prefix (BullMQ queues, rate-limit counters, idempotency keys). */
async function deleteRedisKeys(redisUrl, prefix) {
  if (!prefix) return;
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } catch (error) {
    process.stderr.write(`could not delete the Redis keys ${prefix}*: ${error.message}\n`);
  } finally {
    redis.disconnect();
  }
}
