#!/usr/bin/env node
// The Teltonika listener under load (issue 31): BENCH_TELTONIKA_CONNECTIONS (default 500) devices, each
// sending 10-record Codec 8 packets, one in flight. Two phases:
// - saturation: each device sends its next packet as soon as the acknowledgement is in: the most
//   records/s the listener takes (its latency is queueing at saturation, not what a device sees);
// - at the goal rate: the devices together send BENCH_TELTONIKA_RATE (default 20000) records/s, each on
//   its own schedule (still one packet in flight): the acknowledgement latency at that load.
// Prints records/s and acknowledgement latency (send to ack, as the device sees it) p50/p99, against the
// goals (>= 20,000 records/s, p99 <= 250 ms).
//
// The listener runs in a child process with an in-process authenticator and a sink that stands in for
// the device gateway's batching sink and the DMS: it gathers submits for up to BENCH_TELTONIKA_BATCH_MS
// (default 20, the default DEVICE_BATCH_MAX_WAIT_MS) or 1000 readings, then resolves the whole batch after
// BENCH_TELTONIKA_COMMIT_MS (default 15: a DMS transaction of 1000 readings on a quiet machine). So the
// figures are the listener's own (sockets, framing, CRC, decoding, mapping, acknowledgement) plus that
// modelled wait, not the full stack: that one is measured with the DMS behind it.
//
// Reference, measured in the same run with runs interleaved: a bare TCP server in the same kind of child
// that frames the same packets by their length field and acknowledges each at once (no CRC, no decoding,
// no sink). It is the most a Node process can do with these connections on this machine; the listener's
// rate is also given as a ratio to it.
//
// Run after `npm run -s build`: node bench/device-teltonika.mjs
import { fork } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { median } from './lib/load.mjs';
import { machine, print, table } from './lib/report.mjs';

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const config = {
  connections: env('BENCH_TELTONIKA_CONNECTIONS', 500),
  records: env('BENCH_TELTONIKA_RECORDS', 10),
  duration: env('BENCH_DURATION', 10),
  warmup: env('BENCH_WARMUP', 3),
  runs: env('BENCH_RUNS', 3),
  batchMs: env('BENCH_TELTONIKA_BATCH_MS', 20),
  batchReadings: 1000,
  commitMs: env('BENCH_TELTONIKA_COMMIT_MS', 15),
  rate: env('BENCH_TELTONIKA_RATE', 20000),
};
const codecModule = new URL('../apps/device-gateway/dist/teltonika/teltonika-codec.js', import.meta.url).href;
const listenerModule = new URL('../apps/device-gateway/dist/teltonika/teltonika-listener.js', import.meta.url).href;

// ---------------------------------------------------------------- server side (child process)

async function serve(kind) {
  const port = kind === 'listener' ? await startListener() : await startBareServer();
  let cpuStart = process.cpuUsage();
  process.on('message', (message) => {
    if (message === 'cpu-start') cpuStart = process.cpuUsage();
    if (message === 'cpu-stop') {
      const used = process.cpuUsage(cpuStart);
      process.send({ cpuMs: (used.user + used.system) / 1000 });
    }
  });
  process.send({ port });
}

async function startListener() {
  const { TeltonikaListener } = await import(listenerModule);
  const authenticator = {
    authenticate: async (protocol, identifier) => ({
      credentialId: `credential-${identifier}`,
      deviceId: `device-${identifier}`,
      accountId: 'bench-account',
      protocol,
      identifier,
    }),
    watch: () => () => undefined,
  };
  const listener = new TeltonikaListener(authenticator, new ModelSink(), {
    port: 0,
    host: '127.0.0.1',
    authDeadlineMs: 10_000,
    maxConnections: 50_000,
  });
  return (await listener.start()).port;
}

/** Gathers submits like the device gateway's batching sink, and "commits" each batch after a fixed delay. */
class ModelSink {
  batch = [];
  readings = 0;
  timer = undefined;

  submit(_identity, readings) {
    return new Promise((resolve) => {
      this.batch.push({ resolve, count: readings.length });
      this.readings += readings.length;
      if (this.readings >= config.batchReadings) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), config.batchMs);
    });
  }

  flush() {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.batch;
    this.batch = [];
    this.readings = 0;
    setTimeout(() => {
      for (const { resolve, count } of batch) resolve({ kind: 'committed', outcome: { accepted: count, duplicates: 0, rejected: [] } });
    }, config.commitMs);
  }
}

/** The reference: answers the handshake, frames packets by their length field, acknowledges at once. */
async function startBareServer() {
  const server = createServer((socket) => {
    socket.setNoDelay(true);
    let buffer = Buffer.alloc(0);
    let greeted = false;
    socket.on('data', (chunk) => {
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
      if (!greeted) {
        if (buffer.length < 17) return;
        buffer = buffer.subarray(17);
        greeted = true;
        socket.write(Buffer.from([1]));
      }
      while (buffer.length >= 8) {
        const total = 8 + buffer.readUInt32BE(4) + 4;
        if (buffer.length < total) break;
        const ack = Buffer.alloc(4);
        ack.writeUInt32BE(buffer[9], 0);
        socket.write(ack);
        buffer = buffer.subarray(total);
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server.address().port;
}

// ---------------------------------------------------------------- load side (this process)

async function main() {
  const { encodeAvlPacket, encodeHandshake, CODEC_8 } = await import(codecModule);
  print(`Teltonika listener: ${config.connections} connections, ${config.records}-record Codec 8 packets, one in flight each`);
  print(
    `Sink: a model, not the DMS: batches of up to ${config.batchMs} ms or ${config.batchReadings} readings, each "committed" ` +
      `${config.commitMs} ms after it closes (BENCH_TELTONIKA_BATCH_MS, BENCH_TELTONIKA_COMMIT_MS)`,
  );
  print(`Machine: ${JSON.stringify(machine())}`);

  // A few distinct packets per connection, so the listener maps different records; timestamps move on.
  const packets = Array.from({ length: 16 }, (_, p) =>
    encodeAvlPacket(
      CODEC_8,
      Array.from({ length: config.records }, (_, r) => ({
        timestamp: Date.UTC(2026, 10, 27, 8, 0, 0) + (p * config.records + r) * 1000,
        priority: 0,
        longitude: 253032016 + p * 100 + r,
        latitude: 547146368 + p * 100 + r,
        altitude: 111,
        angle: (p * 10 + r) % 360,
        satellites: 9,
        speed: 60,
        eventIoId: 0,
        io: [
          { id: 239, size: 1, value: 1 },
          { id: 113, size: 1, value: 80 },
          { id: 66, size: 2, value: 12500 },
          { id: 72, size: 4, value: 45 },
          { id: 16, size: 4, value: 123456 + p },
        ],
      })),
    ),
  );

  const servers = {};
  for (const kind of ['listener', 'reference']) servers[kind] = await startChild(kind);
  const fleets = {};
  for (const kind of ['listener', 'reference']) {
    fleets[kind] = await openFleet(servers[kind].port, encodeHandshake, packets);
    print(`${kind}: ${config.connections} devices connected and accepted`);
  }

  // Milliseconds between two packets of one device for the devices together to send `rate` records/s.
  const paced = (config.connections * config.records * 1000) / config.rate;
  const phases = [
    { name: 'saturation', intervalMs: 0 },
    { name: `at ${config.rate} records/s`, intervalMs: paced },
  ];
  const summaries = [];
  for (const phase of phases) {
    print();
    print(`Phase: ${phase.name}${phase.intervalMs ? ` (each device one packet every ${Math.round(phase.intervalMs)} ms)` : ''}`);
    const results = { listener: [], reference: [] };
    if (config.warmup > 0) for (const kind of ['listener', 'reference']) await drive(fleets[kind], servers[kind], config.warmup, phase.intervalMs);
    for (let run = 1; run <= config.runs; run++) {
      for (const kind of ['listener', 'reference']) {
        const result = await drive(fleets[kind], servers[kind], config.duration, phase.intervalMs);
        results[kind].push(result);
        print(
          `  ${kind} run ${run}/${config.runs}: ${result.recordsPerSecond} records/s, ack p50 ${result.p50} ms, p99 ${result.p99} ms, ` +
            `server CPU ${result.cpuMsPer1000} ms per 1000 records, load average ${result.loadAverage}`,
        );
      }
    }
    const summary = (kind) => ({
      recordsPerSecond: Math.round(median(results[kind].map((r) => r.recordsPerSecond))),
      p50: median(results[kind].map((r) => r.p50)),
      p99: median(results[kind].map((r) => r.p99)),
      cpuMsPer1000: median(results[kind].map((r) => r.cpuMsPer1000)),
      loadAverage: median(results[kind].map((r) => r.loadAverage)),
    });
    summaries.push({ phase, listener: summary('listener'), reference: summary('reference') });
  }

  print();
  const rows = summaries.flatMap(({ phase, listener, reference }) => [
    [phase.name, 'Teltonika listener + model sink', listener.recordsPerSecond, listener.p50, listener.p99, listener.cpuMsPer1000, listener.loadAverage],
    [phase.name, 'reference: bare TCP, ack at once', reference.recordsPerSecond, reference.p50, reference.p99, reference.cpuMsPer1000, reference.loadAverage],
  ]);
  print(table(['phase', 'server', 'records/s', 'ack p50 ms', 'ack p99 ms', 'server CPU ms / 1000 records', 'load average'], rows));
  print();
  const [saturation, atGoal] = summaries;
  print(`saturation, listener / reference records/s: ${(saturation.listener.recordsPerSecond / saturation.reference.recordsPerSecond).toFixed(2)}`);
  print(`goal >= 20000 records/s (saturation): ${saturation.listener.recordsPerSecond >= 20000 ? 'met' : 'NOT met'} (${saturation.listener.recordsPerSecond})`);
  print(`goal ack p99 <= 250 ms (at ${config.rate} records/s): ${atGoal.listener.p99 <= 250 ? 'met' : 'NOT met'} (${atGoal.listener.p99} ms)`);

  for (const kind of ['listener', 'reference']) {
    for (const device of fleets[kind]) device.socket.destroy();
    servers[kind].child.kill();
  }
}

function startChild(kind) {
  const child = fork(fileURLToPath(import.meta.url), ['--server', kind], { stdio: 'inherit', env: { ...process.env, LOG_LEVEL: 'silent' } });
  return new Promise((resolve, reject) => {
    child.once('message', ({ port }) => resolve({ child, port }));
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
}

function serverCpu(server, message) {
  return new Promise((resolve) => {
    if (message === 'cpu-start') {
      server.child.send('cpu-start');
      resolve(undefined);
      return;
    }
    server.child.once('message', ({ cpuMs }) => resolve(cpuMs));
    server.child.send('cpu-stop');
  });
}

/** Connects every device and has it accepted; each then sends only while a run is on. */
async function openFleet(port, encodeHandshake, packets) {
  const devices = [];
  for (let i = 0; i < config.connections; i++) {
    const imei = String(350000000000000 + i);
    devices.push(await openDevice(port, encodeHandshake(imei), packets, i));
  }
  return devices;
}

function openDevice(port, handshake, packets, index) {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setNoDelay(true);
    const device = { socket, packets, intervalMs: 0, due: 0, running: false, sentAt: 0, next: index, acks: 0, records: 0, latencies: [], pending: Buffer.alloc(0), onStopped: undefined };
    let accepted = false;
    socket.on('data', (chunk) => {
      if (!accepted) {
        if (chunk[0] !== 1) return reject(new Error('refused'));
        accepted = true;
        resolve(device);
        chunk = chunk.subarray(1);
      }
      device.pending = device.pending.length ? Buffer.concat([device.pending, chunk]) : chunk;
      while (device.pending.length >= 4) {
        const count = device.pending.readUInt32BE(0);
        device.pending = device.pending.subarray(4);
        device.latencies.push(performance.now() - device.sentAt);
        device.acks += 1;
        device.records += count;
        send(device);
      }
    });
    socket.on('error', reject);
    socket.write(handshake);
  });
}

function send(device) {
  if (!device.running) {
    device.onStopped?.();
    device.onStopped = undefined;
    return;
  }
  if (device.intervalMs) {
    const now = performance.now();
    if (now < device.due) {
      setTimeout(() => send(device), device.due - now);
      return;
    }
    device.due = Math.max(device.due + device.intervalMs, now);
  }
  device.sentAt = performance.now();
  device.socket.write(device.packets[device.next++ % device.packets.length]);
}

async function drive(devices, server, seconds, intervalMs) {
  const now = performance.now();
  for (const [index, device] of devices.entries()) {
    device.acks = 0;
    device.records = 0;
    device.latencies = [];
    device.intervalMs = intervalMs;
    // Spread the devices' schedules over one interval, as real devices' are.
    device.due = now + (intervalMs * index) / devices.length;
  }
  const loadAverage = Math.round(loadavg()[0] * 100) / 100;
  await serverCpu(server, 'cpu-start');
  const started = performance.now();
  for (const device of devices) {
    device.running = true;
    send(device);
  }
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  // Stop sending; wait for every packet in flight to be acknowledged, and count time to the last ack.
  const stopped = devices.map((device) => new Promise((resolve) => (device.onStopped = resolve)));
  for (const device of devices) device.running = false;
  await Promise.all(stopped);
  const elapsed = (performance.now() - started) / 1000;
  const cpuMs = await serverCpu(server, 'cpu-stop');
  const records = devices.reduce((sum, device) => sum + device.records, 0);
  const latencies = devices.flatMap((device) => device.latencies).sort((a, b) => a - b);
  const pick = (q) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] * 10) / 10;
  return {
    recordsPerSecond: Math.round(records / elapsed),
    p50: pick(0.5),
    p99: pick(0.99),
    cpuMsPer1000: Math.round((cpuMs / Math.max(1, records)) * 1000 * 10) / 10,
    loadAverage,
  };
}

if (process.argv[2] === '--server') await serve(process.argv[3]);
else await main();
