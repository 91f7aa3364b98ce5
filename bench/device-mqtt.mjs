#!/usr/bin/env node
// `npm run bench:device-mqtt` (issue 31): the device gateway's MQTT listener on its own, with an
// in-process sink in place of the batcher and the DMS.
//
// 1. Throughput: BENCH_MQTT_DEVICES (2000) connected devices, MQTT 3.1.1, one reading per QoS 1 PUBLISH,
//    one message in flight per device. Prints messages/s and the PUBACK p50/p99. The sink gathers the
//    submits of all devices for up to BENCH_MQTT_BATCH_WAIT_MS (20 ms, the default DEVICE_BATCH_MAX_WAIT_MS)
//    or 1000 readings, then resolves them together after BENCH_MQTT_COMMIT_MS (10 ms, a DMS commit).
//    Reference, in the same run and interleaved (reference 1, listener 1, reference 2, ...): the least
//    any listener must do, a bare mqtt-packet loop (parse, hand the payload to the same sink, PUBACK)
//    without authentication, ACLs, payload parsing or ordering.
// 2. Memory: BENCH_MQTT_IDLE (10,000) authenticated idle connections; the listener process's memory
//    growth per connection (after a forced GC), against a bare `net` server holding as many sockets.
//
// The load generator is bench/lib/mqtt-fleet.mjs: raw MQTT 3.1.1 sockets with pre-built packets, lighter
// than mqtt.js, so that the figures are the listener's rather than the client's (BENCH_MQTT_CLIENT=mqttjs:
// mqtt.js clients instead, to measure the client's own ceiling). It runs in this process; each server
// runs in a child process of its own. The full-stack figure (gateway, DMS, PostgreSQL) is measured
// after integration.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { createConnection, createServer } from 'node:net';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import mqttPacket from 'mqtt-packet';
import { connectFleet } from './lib/mqtt-fleet.mjs';

const int = (name, fallback) => Number(process.env[name] ?? fallback);
const config = {
  devices: int('BENCH_MQTT_DEVICES', 2000),
  idle: int('BENCH_MQTT_IDLE', 10_000),
  duration: int('BENCH_DURATION', 10),
  warmup: int('BENCH_MQTT_WARMUP', 3),
  runs: int('BENCH_RUNS', 2),
  batchWaitMs: int('BENCH_MQTT_BATCH_WAIT_MS', 20),
  batchMax: int('BENCH_MQTT_BATCH_MAX', 1000),
  commitMs: int('BENCH_MQTT_COMMIT_MS', 10),
  /** The load generator of the throughput phase: `raw` sockets or `mqttjs` clients (bench/lib/mqtt-fleet.mjs). */
  client: process.env.BENCH_MQTT_CLIENT ?? 'raw',
  /** BENCH_MQTT_PHASES=memory (or throughput) runs one phase only. */
  phases: (process.env.BENCH_MQTT_PHASES ?? 'throughput,memory').split(','),
};
const SECRET = 'dvs_bench-secret';

if (process.argv[2] === '--server') await serve(process.argv[3]);
else await main();

// ---------------------------------------------------------------------------------------------------
// Child: one server.

async function serve(kind) {
  const sink = batchingSink();
  let port;
  if (kind === 'listener') {
    const { MqttListener } = await import('../apps/device-gateway/dist/mqtt/mqtt-listener.js');
    const identities = new Map();
    const authenticator = {
      async authenticate(_protocol, identifier, secret) {
        if (secret !== SECRET) return null;
        let identity = identities.get(identifier);
        if (!identity) identities.set(identifier, (identity = { credentialId: identifier, deviceId: identifier, accountId: 'bench', protocol: 'Mqtt', identifier }));
        return identity;
      },
      watch: () => () => undefined,
    };
    const listener = new MqttListener(authenticator, sink, { port: 0, host: '127.0.0.1', maxConnections: 100_000 });
    ({ port } = await listener.start());
  } else if (kind === 'reference') {
    port = await listen(createServer((socket) => bareMqtt(socket, sink)));
  } else {
    const sockets = new Set();
    port = await listen(createServer((socket) => (sockets.add(socket), socket.on('close', () => sockets.delete(socket)))));
  }
  process.on('message', (message) => {
    if (message === 'exit') process.exit(0);
    if (message === 'memory') {
      global.gc();
      global.gc();
      process.send({ memory: process.memoryUsage() });
    }
  });
  global.gc();
  process.send({ port, memory: process.memoryUsage() });
}

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

/** The reference: parse, submit the payload to the sink, PUBACK once it resolved. */
function bareMqtt(socket, sink) {
  const parser = mqttPacket.parser();
  parser.on('packet', (packet) => {
    if (packet.cmd === 'connect') socket.write(mqttPacket.generate({ cmd: 'connack', returnCode: 0, sessionPresent: false }));
    else if (packet.cmd === 'publish') {
      void sink.submit(null, [packet.payload]).then(() => socket.write(mqttPacket.generate({ cmd: 'puback', messageId: packet.messageId })));
    }
  });
  socket.on('data', (chunk) => parser.parse(chunk));
  socket.on('error', () => socket.destroy());
}

/** The submits of all devices gathered for up to batchWaitMs or batchMax readings, resolved together after commitMs. */
function batchingSink() {
  let pending = [];
  let readings = 0;
  let timer = null;
  const flush = () => {
    clearTimeout(timer);
    timer = null;
    const batch = pending;
    pending = [];
    readings = 0;
    setTimeout(() => {
      for (const { resolve, count } of batch) resolve({ kind: 'committed', outcome: { accepted: count, duplicates: 0, rejected: [] } });
    }, config.commitMs);
  };
  return {
    submit(_identity, list) {
      return new Promise((resolve) => {
        pending.push({ resolve, count: list.length });
        readings += list.length;
        if (readings >= config.batchMax) flush();
        else if (!timer) timer = setTimeout(flush, config.batchWaitMs);
      });
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Parent: the load.

async function main() {
  const load = () => loadavg().map((v) => v.toFixed(2)).join(' ');
  print(`MQTT listener benchmark, ${new Date().toISOString()}, node ${process.version}, load average ${load()}`);
  print(`sink: gathers submits for up to ${config.batchWaitMs} ms or ${config.batchMax} readings, resolves them after a ${config.commitMs} ms "commit" (no DMS, no PostgreSQL)`);
  if (config.phases.includes('throughput')) await throughputPhase(load);
  if (config.phases.includes('memory')) await memoryPhase(load);
}

async function throughputPhase(load) {
  print('');
  print(`1. ${config.devices} devices (${config.client} client), MQTT 3.1.1, QoS 1, one reading per message, one in flight per device; ${config.runs} x ${config.duration} s after ${config.warmup} s warm-up`);
  const rows = { reference: [], listener: [] };
  for (let run = 1; run <= config.runs; run++) {
    for (const kind of ['reference', 'listener']) {
      const result = await throughput(kind);
      rows[kind].push(result);
      print(`   ${kind.padEnd(9)} run ${run}: ${Math.round(result.rate).toLocaleString('en')} messages/s, PUBACK p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms (load ${load()})`);
    }
  }
  const best = (kind) => rows[kind].reduce((a, b) => (b.rate > a.rate ? b : a));
  const median = (kind, key) => {
    const values = rows[kind].map((r) => r[key]).sort((a, b) => a - b);
    const middle = Math.floor(values.length / 2);
    return values.length % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
  };
  print(
    `   median: listener ${Math.round(median('listener', 'rate')).toLocaleString('en')} messages/s (p50 ${median('listener', 'p50').toFixed(1)} ms, p99 ${median('listener', 'p99').toFixed(1)} ms),` +
      ` reference ${Math.round(median('reference', 'rate')).toLocaleString('en')} messages/s; ratio ${(median('listener', 'rate') / median('reference', 'rate')).toFixed(2)}` +
      ` (best listener run ${Math.round(best('listener').rate).toLocaleString('en')})`,
  );
}

async function memoryPhase(load) {
  print('');
  print(`2. ${config.idle.toLocaleString('en')} idle connections, memory of the server process per connection (after GC)`);
  for (const kind of ['bare', 'listener']) {
    const m = await idleMemory(kind);
    print(`   ${kind === 'bare' ? 'bare net server' : 'MQTT listener  '}: rss +${(m.rss / 1024).toFixed(1)} KiB, heap +${(m.heapUsed / 1024).toFixed(1)} KiB, external +${(m.external / 1024).toFixed(1)} KiB per connection (load ${load()})`);
  }
}

function print(line) {
  process.stdout.write(`${line}\n`);
}

async function startServer(kind) {
  // BENCH_MQTT_CPU_PROF=<dir>: a CPU profile of each server process (summarize with bench/cpuprofile-summary.mjs).
  const profile = process.env.BENCH_MQTT_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_MQTT_CPU_PROF, '--cpu-prof-name', `${kind}-${Date.now()}.cpuprofile`] : [];
  const child = fork(fileURLToPath(import.meta.url), ['--server', kind], { execArgv: ['--expose-gc', ...profile], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [ready] = await once(child, 'message');
  return {
    port: ready.port,
    baseline: ready.memory,
    memory: async () => {
      child.send('memory');
      const [reply] = await once(child, 'message');
      return reply.memory;
    },
    stop: async () => {
      const exited = once(child, 'exit');
      child.send('exit');
      await exited;
    },
  };
}

/** Opens `count` connections, at most 200 handshakes at a time, each authenticated (CONNACK read). */
async function connectMany(port, count, open = connectOne) {
  const clients = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      clients[index] = await open(port, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(200, count) }, worker));
  return clients;
}

function connectOne(port, index) {
  return new Promise((resolve, reject) => {
    const socket = createConnection(port, '127.0.0.1');
    socket.setNoDelay(true);
    socket.once('error', reject);
    socket.once('connect', () =>
      socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId: `bench-${index}`, clean: true, keepalive: 0, username: `device-${index}`, password: Buffer.from(SECRET) })),
    );
    socket.once('data', (chunk) => {
      if (chunk[0] !== 0x20 || chunk[3] !== 0) return reject(new Error(`device-${index}: no CONNACK 0 (${chunk.toString('hex')})`));
      socket.removeAllListeners('error');
      socket.on('error', () => undefined);
      resolve(socket);
    });
  });
}

async function throughput(kind) {
  const server = await startServer(kind);
  const credentials = Array.from({ length: config.devices }, (_, index) => ({ clientId: `bench-${index}`, username: `device-${index}`, password: SECRET }));
  const fleet = await connectFleet(config.client, server.port, credentials, (recordedAt) =>
    JSON.stringify({ recordedAt, location: { lat: 52.520008, lng: 13.404954 }, speedMps: 12.5, headingDegrees: 270, batteryPercent: 87 }),
  );
  let clock = Date.now() - 3_600_000;
  const next = () => (clock += 1);
  await fleet.publish(config.warmup, next);
  const started = performance.now();
  const { acknowledged, latencies } = await fleet.publish(config.duration, next);
  const seconds = (performance.now() - started) / 1000;
  await fleet.close();
  await server.stop();
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { rate: acknowledged / seconds, p50: at(0.5), p99: at(0.99) };
}

async function idleMemory(kind) {
  const server = await startServer(kind);
  const before = await server.memory();
  const plain = (port) => new Promise((resolve) => { const socket = createConnection(port, '127.0.0.1', () => resolve(socket)); });
  const sockets = await connectMany(server.port, config.idle, kind === 'bare' ? plain : connectOne);
  // Let the server settle (its side of the last handshakes) before reading its memory.
  await sleep(1000);
  const after = await server.memory();
  for (const socket of sockets) socket.destroy();
  await server.stop();
  const per = (key) => (after[key] - before[key]) / config.idle;
  return { rss: per('rss'), heapUsed: per('heapUsed'), external: per('external') };
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
