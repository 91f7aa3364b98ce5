#!/usr/bin/env node
// `npm run bench:device-gateway` (issue 31): the device gateway's core under many trackers, each sending
// one reading per message with one message in flight (as an MQTT device at QoS 1 does), against the
// JSON API's batch ingest measured in the same run. Trackers speak HTTP (`POST /v1/readings`, one
// reading, a keep-alive connection per device) and MQTT (MQTT 3.1.1, one reading per QoS 1 PUBLISH, the
// next sent once its PUBACK came; BENCH_MQTT_CLIENT: `raw` sockets with pre-encoded packets, the default,
// or `mqttjs` clients, bench/lib/mqtt-fleet.mjs) to the device gateway's own process.
//
// Alternates BENCH_RUNS runs of BENCH_DURATION seconds of five scenarios: the device gateway's process
// over HTTP (BENCH_DEVICE_CONNECTIONS devices, default 500); the same process over MQTT
// (BENCH_MQTT_DEVICES connected devices, default 2000; PUBACK latency); the same process over Teltonika
// (BENCH_TELTONIKA_CONNECTIONS connections, default 500, each sending BENCH_TELTONIKA_RECORDS-record
// Codec 8 packets, default 10, the next as soon as the record count of the last came back; raw TCP;
// acknowledgement latency, send to record count); its sink alone, in this process, with
// BENCH_SINK_DEVICES (default 2000) devices each submitting one reading at a time (what an MQTT listener
// asks of it, without MQTT); the API (batches of 1000 readings, 4 in flight); and the floor under all of
// them, PostgreSQL alone (`bare`): BENCH_BARE_BATCH (500) readings of as many devices per transaction, 4 in
// flight on the DMS's database, each transaction a bare batched INSERT into a copy of the readings table
// (`bare_readings`, its key and index, no partitions, as bench/readings.mjs) and an UPDATE of the devices'
// last_seen_at (their api_json trigger runs), what any ingest of one reading per device must at least
// write; the batch size is about what the sink gathers from 2000 devices with 4 calls in flight. Every reading and record
// is new (its own recordedAt), so each one is inserted. Prints readings/s, p50/p99 of a message, packet or
// batch, the ratios, and the load average; for HTTP, MQTT, Teltonika and the API also the CPU µs per reading
// of each process on the path (the services, their PostgreSQL backends, NATS, Redis and this process, the load
// generator) and how busy the whole machine was. Rate limits are off (as in every benchmark).
// BENCH_DEVICES_FILLFACTOR sets the devices table's fillfactor before the devices are made (the DMS's own is 50).
// BENCH_DEVICE_SCENARIOS (comma-separated: http, mqtt, teltonika, sink, api, bare) runs some only; the API is the
// reference and always runs. BENCH_PREFIX names the databases (default bench_devices). BENCH_PROFILE=1
// also profiles every service (V8's sampling profiler, bench/lib/profiler-preload.mjs) during one more run
// of the first device scenario after the measured ones, and prints each one's top functions.
import autocannon from 'autocannon';
import pg from 'pg';
import { connect as connectTcp } from 'node:net';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { READING_VALUES } from '@tracking/contracts';
import { createLogger } from '@tracking/core';
import { ServiceMetrics } from '@tracking/observability';
import { readDeviceGatewayConfig } from '../apps/device-gateway/dist/config.js';
import { startDeviceGateway } from '../apps/device-gateway/dist/device-gateway.js';
import { CODEC_8, encodeAvlPacket, encodeHandshake } from '../apps/device-gateway/dist/teltonika/teltonika-codec.js';
import { summarize } from './cpuprofile-summary.mjs';
import { brokerPids, CpuMeter } from './lib/cpu.mjs';
import { readBenchConfig } from './lib/config.mjs';
import { api, inPool, issueToken } from './lib/http.mjs';
import { median } from './lib/load.mjs';
import { connectFleet } from './lib/mqtt-fleet.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import { provision, seedDevices } from './lib/seed.mjs';
import { BenchStack, databaseNames, databaseUrl, freePort, resetDatabases, sleep } from './lib/stack.mjs';

const base = readBenchConfig();
const config = {
  ...base,
  prefix: process.env.BENCH_PREFIX ? base.prefix : 'bench_devices',
  deviceConnections: Number(process.env.BENCH_DEVICE_CONNECTIONS ?? 500),
  sinkDevices: Number(process.env.BENCH_SINK_DEVICES ?? 2000),
  mqttDevices: Number(process.env.BENCH_MQTT_DEVICES ?? 2000),
  mqttClient: process.env.BENCH_MQTT_CLIENT ?? 'raw',
  teltonikaConnections: Number(process.env.BENCH_TELTONIKA_CONNECTIONS ?? 500),
  teltonikaRecords: Number(process.env.BENCH_TELTONIKA_RECORDS ?? 10),
  scenarios: (process.env.BENCH_DEVICE_SCENARIOS ?? 'http,mqtt,teltonika,sink,api,bare').split(',').filter(Boolean),
  apiBatch: 1000,
  apiInFlight: 4,
  bareBatch: Number(process.env.BENCH_BARE_BATCH ?? 500),
};
const runs = (scenario) => config.scenarios.includes(scenario);
if (!runs('http')) config.deviceConnections = 0;
if (!runs('mqtt')) config.mqttDevices = 0;
if (!runs('teltonika')) config.teltonikaConnections = 0;
if (!runs('sink')) config.sinkDevices = 0;
await resetDatabases(config, Object.values(databaseNames(config)));
const stack = await new BenchStack(config, { services: ['oms', 'dms', 'gateway', 'device-gateway'], profile: process.env.BENCH_PROFILE === '1' }).prepare();
// The Teltonika listener on a port of its own (the stack leaves it on a free one nobody knows).
stack.ports.deviceTeltonika = await freePort();
stack.env.DEVICE_TELTONIKA_PORT = String(stack.ports.deviceTeltonika);
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config }, runs: [] };
try {
  print(`starting the stack (${config.deviceConnections} devices)...`);
  await stack.start('device-gateway');
  if (process.env.BENCH_DEVICES_FILLFACTOR) {
    // Before the devices exist, so that their pages take it: the A/B of the DMS migration that set 50.
    const client = new pg.Client({ connectionString: databaseUrl(config, databaseNames(config).dms) });
    await client.connect();
    await client.query(`ALTER TABLE devices SET (fillfactor = ${Number(process.env.BENCH_DEVICES_FILLFACTOR)})`);
    await client.end();
  }
  const { credentials, writeAccountId } = provision(stack);
  const token = await issueToken(stack.base, credentials);
  const { results: deviceIds } = await seedDevices(
    stack.base,
    token,
    writeAccountId,
    Math.max(config.deviceConnections, config.sinkDevices, config.mqttDevices, config.teltonikaConnections, 1),
    8,
    'TRACKER',
  );
  const { results: secrets } = await inPool('credentials', Math.max(config.deviceConnections, config.sinkDevices), 8, async (index) => {
    const { body } = await api(stack.base, 'POST', `/v1/accounts/${writeAccountId}/devices/${deviceIds[index]}/credentials`, { token, body: { protocol: 'Http' } });
    return body.secret;
  });
  const { results: mqttCredentials } = await inPool('MQTT credentials', config.mqttDevices, 8, async (index) => {
    const { body } = await api(stack.base, 'POST', `/v1/accounts/${writeAccountId}/devices/${deviceIds[index]}/credentials`, { token, body: { protocol: 'Mqtt' } });
    return { username: body.identifier, password: body.secret };
  });
  // One Teltonika credential per connection, each with its own IMEI.
  const imeis = Array.from({ length: config.teltonikaConnections }, (_, index) => String(356000000000000 + index));
  await inPool('Teltonika credentials', config.teltonikaConnections, 8, async (index) => {
    const { status } = await api(stack.base, 'POST', `/v1/accounts/${writeAccountId}/devices/${deviceIds[index]}/credentials`, {
      token,
      body: { protocol: 'Teltonika', identifier: imeis[index] },
    });
    if (status !== 201) throw new Error(`Teltonika credential: ${status}`);
  });
  const deviceBase = `http://127.0.0.1:${stack.ports.deviceHttp}`;
  // The MQTT devices stay connected across the runs (connecting is not what is measured).
  const mqttFleet = await connectFleet(
    config.mqttClient,
    stack.ports.deviceMqtt,
    mqttCredentials.map((credential, index) => ({ ...credential, clientId: `bench-${index}` })),
    (recordedAt) => JSON.stringify({ recordedAt, temperatureC: 4.5, location: { lat: 51.9, lng: 4.4 } }),
  );
  // Every reading gets its own recordedAt, one millisecond apart per device: never a duplicate.
  // Six hours back: a run of every scenario moves it on by about 20 minutes, and the DMS refuses readings
  // more than 5 minutes in the future.
  let clock = Date.now() - 6 * 3_600_000;

  const deviceRun = (duration) => {
    let next = 0;
    return autocannon({
      url: deviceBase,
      connections: config.deviceConnections,
      duration,
      timeout: 30,
      requests: [
        {
          method: 'POST',
          path: '/v1/readings',
          setupRequest(request, context) {
            context.secret ??= secrets[next++ % secrets.length];
            clock += 1;
            return {
              ...request,
              headers: { authorization: `Bearer ${context.secret}`, 'content-type': 'application/json' },
              body: JSON.stringify({ readings: [{ recordedAt: new Date(clock).toISOString(), temperatureC: 4.5, location: { lat: 51.9, lng: 4.4 } }] }),
            };
          },
        },
      ],
    });
  };
  const apiRun = (duration) =>
    autocannon({
      url: stack.base,
      connections: config.apiInFlight,
      duration,
      timeout: 30,
      requests: [
        {
          method: 'POST',
          path: `/v1/accounts/${writeAccountId}/readings`,
          setupRequest(request) {
            const readings = Array.from({ length: config.apiBatch }, (_, i) => {
              clock += 1;
              return { deviceId: deviceIds[i % deviceIds.length], recordedAt: new Date(clock).toISOString(), temperatureC: 4.5, location: { lat: 51.9, lng: 4.4 } };
            });
            return { ...request, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ readings }) };
          },
        },
      ],
    });
  const mqttRun = async (duration) => {
    const { acknowledged, failed, latencies } = await mqttFleet.publish(duration, () => (clock += 1));
    latencies.sort((a, b) => a - b);
    const at = (q) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
    return { readingsPerSecond: Math.round(acknowledged / duration), p50: at(0.5), p99: at(0.99), non2xx: failed, errors: 0 };
  };
  // Teltonika: raw TCP, the IMEI handshake once, then 10-record packets, one in flight per connection.
  const trackers = [];
  for (let i = 0; i < config.teltonikaConnections; i += 50) {
    trackers.push(...(await Promise.all(imeis.slice(i, i + 50).map((imei) => openTracker(stack.ports.deviceTeltonika, imei)))));
  }
  const packetOf = () =>
    encodeAvlPacket(
      CODEC_8,
      Array.from({ length: config.teltonikaRecords }, (_, r) => {
        clock += 1;
        return {
          timestamp: clock,
          priority: 0,
          longitude: 44000000 + r,
          latitude: 519000000 + r,
          altitude: 10,
          angle: 90,
          satellites: 9,
          speed: 60,
          eventIoId: 0,
          io: [
            { id: 113, size: 1, value: 80 },
            { id: 72, size: 4, value: 45 },
          ],
        };
      }),
    );
  const teltonikaRun = async (duration) => {
    const latencies = [];
    let records = 0;
    let failed = 0;
    const end = Date.now() + duration * 1000;
    await Promise.all(
      trackers.map(async (tracker) => {
        while (Date.now() < end) {
          const started = performance.now();
          const count = await tracker.send(packetOf());
          if (count === config.teltonikaRecords) {
            latencies.push(performance.now() - started);
            records += count;
          } else failed += 1;
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const at = (q) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
    return { readingsPerSecond: Math.round(records / duration), p50: at(0.5), p99: at(0.99), non2xx: failed, errors: 0 };
  };
  // The sink in this process, on the stack's NATS and Redis, without listeners.
  const skipped = { readingsPerSecond: 0, p50: 0, p99: 0, non2xx: 0, errors: 0 };
  const sinkGateway = await startDeviceGateway(readDeviceGatewayConfig(stack.env), createLogger('bench-sink', 'warn'), new ServiceMetrics('bench-sink'), []);
  const sinkIdentities = [];
  for (const secret of secrets.slice(0, config.sinkDevices)) sinkIdentities.push(await sinkGateway.authenticator.authenticate('Http', '', secret));
  const sinkRun = async (duration) => {
    const latencies = [];
    let accepted = 0;
    let failed = 0;
    const end = Date.now() + duration * 1000;
    await Promise.all(
      sinkIdentities.map(async (identity) => {
        while (Date.now() < end) {
          clock += 1;
          const started = performance.now();
          const result = await sinkGateway.sink.submit(identity, [{ recordedAt: new Date(clock).toISOString(), temperatureC: 4.5, location: { lat: 51.9, lng: 4.4 } }]);
          latencies.push(performance.now() - started);
          if (result.kind === 'committed') accepted += result.outcome.accepted;
          else failed += 1;
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const at = (q) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
    return { readingsPerSecond: Math.round(accepted / duration), p50: at(0.5), p99: at(0.99), non2xx: failed, errors: 0 };
  };
  const figures = (result, perRequest) => ({
    readingsPerSecond: Math.round((result['2xx'] * perRequest) / result.duration),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  });

  // The floor: PostgreSQL alone writing what one reading per device must write (see the header).
  const bare = runs('bare') ? await bareWriter(databaseUrl(config, databaseNames(config).dms), credentials.tenantId, writeAccountId) : undefined;
  const bareRun = async (duration) => {
    const latencies = [];
    let stored = 0;
    const end = Date.now() + duration * 1000;
    await Promise.all(
      Array.from({ length: config.apiInFlight }, async (_, lane) => {
        const devices = Array.from({ length: config.bareBatch }, (_, i) => deviceIds[(lane * config.bareBatch + i) % deviceIds.length]);
        while (Date.now() < end) {
          const started = performance.now();
          stored += await bare.write(devices, devices.map(() => (clock += 1)));
          latencies.push(performance.now() - started);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const at = (q) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
    return { readingsPerSecond: Math.round(stored / duration), p50: at(0.5), p99: at(0.99), non2xx: 0, errors: 0 };
  };

  if (config.warmup > 0) {
    if (runs('http')) await deviceRun(config.warmup);
    if (runs('mqtt')) await mqttRun(config.warmup);
    if (runs('teltonika')) await teltonikaRun(config.warmup);
    if (runs('sink')) await sinkRun(config.warmup);
    await apiRun(config.warmup);
    if (runs('bare')) await bareRun(config.warmup);
  }
  // CPU per reading of every process on the path, the load generator (this process) included: on a shared
  // 2-core machine a steadier figure than readings/s, and what says how far a core goes.
  const names = databaseNames(config);
  const brokers = brokerPids();
  const cpuMeter = new CpuMeter(databaseUrl(config, 'postgres'), () => ({ ...stack.pids(), ...brokers }), [names.gateway, names.oms, names.dms]);
  const cpuPerReading = {};
  const measured = async (scenario, run) => {
    const before = await cpuMeter.sample();
    const generatorBefore = process.cpuUsage();
    const machineBefore = machineCpuMs();
    const result = await run();
    const after = await cpuMeter.sample();
    const generator = process.cpuUsage(generatorBefore);
    const machineUsed = machineCpuMs() - machineBefore;
    const readings = result.readingsPerSecond * config.duration;
    // In µs: CpuMeter.perRequest's 0.01 ms is too coarse per reading.
    const usedMs = CpuMeter.used(before, after);
    usedMs.generator = (generator.user + generator.system) / 1000;
    usedMs.total += usedMs.generator;
    const microseconds = Object.fromEntries(Object.entries(usedMs).map(([name, ms]) => [name, readings > 0 ? Math.round((ms * 10000) / readings) / 10 : null]));
    // The whole machine's busy share over the run (2 cores = 100 %), other people's work included.
    microseconds.machineBusyPercent = Math.round((machineUsed / (config.duration * 1000 * availableParallelism())) * 1000) / 10;
    (cpuPerReading[scenario] ??= []).push(microseconds);
    return { ...result, cpuMicrosecondsPerReading: microseconds };
  };
  for (let run = 1; run <= config.runs; run++) {
    const loadBefore = loadavg()[0];
    const device = runs('http') ? await measured('http', async () => figures(await deviceRun(config.duration), 1)) : skipped;
    const mqtt = runs('mqtt') ? await measured('mqtt', () => mqttRun(config.duration)) : skipped;
    const teltonika = runs('teltonika') ? await measured('teltonika', () => teltonikaRun(config.duration)) : skipped;
    const sink = runs('sink') ? await sinkRun(config.duration) : skipped;
    const reference = await measured('api', async () => figures(await apiRun(config.duration), config.apiBatch));
    const floor = runs('bare') ? await bareRun(config.duration) : skipped;
    results.runs.push({ run, loadAverage: Math.round(loadBefore * 100) / 100, device, mqtt, teltonika, sink, api: reference, bare: floor });
    for (const [scenario, figure] of [['HTTP', device], ['MQTT', mqtt], ['Teltonika', teltonika], ['API', reference]]) {
      if (figure.cpuMicrosecondsPerReading) print(`  CPU µs per reading, ${scenario}: ${cpuLine(figure.cpuMicrosecondsPerReading)}`);
    }
    print(
      `run ${run}: device HTTP ${device.readingsPerSecond}/s (p99 ${device.p99} ms), MQTT ${mqtt.readingsPerSecond}/s (PUBACK p50 ${mqtt.p50} ms, p99 ${mqtt.p99} ms), ` +
        `Teltonika ${teltonika.readingsPerSecond} records/s (ack p50 ${teltonika.p50} ms, p99 ${teltonika.p99} ms), ` +
        `sink ${sink.readingsPerSecond}/s (p99 ${sink.p99} ms), ` +
        `API ${reference.readingsPerSecond}/s, bare ${floor.readingsPerSecond}/s (p99 ${floor.p99} ms), load ${loadBefore.toFixed(2)}`,
    );
  }
  if (stack.profile) {
    const [scenario, run] = [
      ['mqtt', mqttRun],
      ['teltonika', teltonikaRun],
      ['http', async (duration) => figures(await deviceRun(duration), 1)],
    ].find(([name]) => runs(name)) ?? ['api', async (duration) => figures(await apiRun(duration), config.apiBatch)];
    rmSync(stack.profileDir, { recursive: true, force: true });
    const loadBefore = loadavg()[0];
    stack.signal('SIGWINCH');
    await sleep(200);
    const profiled = await run(config.duration);
    stack.signal('SIGWINCH');
    print(`\nprofiled run (${scenario}): ${profiled.readingsPerSecond}/s, p99 ${profiled.p99} ms, load ${loadBefore.toFixed(2)}`);
    for (const file of await profiles(Object.values(stack.pids()))) print(summarize(JSON.parse(readFileSync(file, 'utf8')), file.split('/').at(-1)).text);
  }
  await sinkGateway.stop();
  await bare?.close();
  await mqttFleet.close();
  for (const tracker of trackers) tracker.close();
  const med = (pick) => median(results.runs.map(pick));
  const device = med((r) => r.device.readingsPerSecond);
  const reference = med((r) => r.api.readingsPerSecond);
  print();
  print(
    table(
      ['scenario', 'readings/s', 'p50 ms', 'p99 ms', 'non-2xx'],
      [
        [`device gateway over HTTP, ${config.deviceConnections} devices, 1 reading per message`, device, med((r) => r.device.p50), med((r) => r.device.p99), med((r) => r.device.non2xx)],
        [`device gateway over MQTT, ${config.mqttDevices} devices, 1 reading per QoS 1 PUBLISH (PUBACK latency)`, med((r) => r.mqtt.readingsPerSecond), med((r) => r.mqtt.p50), med((r) => r.mqtt.p99), med((r) => r.mqtt.non2xx)],
        [
          `device gateway over Teltonika, ${config.teltonikaConnections} connections, ${config.teltonikaRecords}-record Codec 8 packets (records/s, ack latency)`,
          med((r) => r.teltonika.readingsPerSecond),
          med((r) => r.teltonika.p50),
          med((r) => r.teltonika.p99),
          med((r) => r.teltonika.non2xx),
        ],
        [`its sink alone, ${config.sinkDevices} devices, 1 reading per submit`, med((r) => r.sink.readingsPerSecond), med((r) => r.sink.p50), med((r) => r.sink.p99), med((r) => r.sink.non2xx)],
        [`JSON API, ${config.apiBatch} per batch, ${config.apiInFlight} in flight`, reference, med((r) => r.api.p50), med((r) => r.api.p99), med((r) => r.api.non2xx)],
        [`bare: PostgreSQL alone, ${config.bareBatch} devices x 1 reading per transaction, ${config.apiInFlight} in flight`, med((r) => r.bare.readingsPerSecond), med((r) => r.bare.p50), med((r) => r.bare.p99), 0],
      ],
    ),
  );
  const sink = med((r) => r.sink.readingsPerSecond);
  const mqtt = med((r) => r.mqtt.readingsPerSecond);
  const teltonika = med((r) => r.teltonika.readingsPerSecond);
  print(
    `device gateway over MQTT / API: ${(mqtt / Math.max(1, reference)).toFixed(2)}x; over Teltonika / API: ${(teltonika / Math.max(1, reference)).toFixed(2)}x; ` +
      `over HTTP / API: ${(device / Math.max(1, reference)).toFixed(2)}x; sink / API: ${(sink / Math.max(1, reference)).toFixed(2)}x; load average ${med((r) => r.loadAverage)}`,
  );
  results.summary = {
    device,
    mqtt,
    mqttRatio: mqtt / Math.max(1, reference),
    teltonika,
    teltonikaRatio: teltonika / Math.max(1, reference),
    sink,
    api: reference,
    ratio: device / Math.max(1, reference),
    sinkRatio: sink / Math.max(1, reference),
    bare: med((r) => r.bare.readingsPerSecond),
  };
  // Median CPU µs per reading of each scenario measured, per process.
  for (const [scenario, list] of Object.entries(cpuPerReading)) {
    const keys = Object.keys(list[0] ?? {});
    const mid = Object.fromEntries(keys.map((key) => [key, Math.round(median(list.map((figures) => figures[key] ?? 0)) * 10) / 10]));
    results.summary[`${scenario}CpuMicrosecondsPerReading`] = mid;
    print(`CPU µs per reading, ${scenario} (medians of ${list.length} runs): ${cpuLine(mid)}`);
  }
  await cpuMeter.close();
  writeResults('device-gateway', results);
} finally {
  await stack.close();
}

/**
 * The floor's writer on the DMS's database: `write(deviceIds, recordedAts)` stores one reading per device
 * in `bare_readings` and moves each device's last known fields, in one transaction; resolves with the
 * rows stored.
 */
async function bareWriter(url, tenantId, accountId) {
  const columns = READING_VALUES.map((value) => value.column);
  const pool = new pg.Pool({ connectionString: url, max: config.apiInFlight });
  await pool.query('CREATE TABLE IF NOT EXISTS bare_readings (LIKE readings INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)');
  const insert = `
    INSERT INTO bare_readings (id, tenant_id, account_id, device_id, recorded_at, received_at, ${columns.join(', ')})
    SELECT gen_random_uuid(), $1, $2, u.device_id, u.recorded_at, now(), ${columns.map((c) => (c === 'lat' || c === 'lng' || c === 'temperature_c' ? `u.${c}` : 'NULL')).join(', ')}
      FROM unnest($3::uuid[], $4::timestamptz[], $5::float8[], $6::float8[], $7::float8[]) AS u (device_id, recorded_at, lat, lng, temperature_c)
    ON CONFLICT DO NOTHING`;
  const move = `
    UPDATE devices AS d SET last_seen_at = u.seen_at, last_location_lat = u.lat, last_location_lng = u.lng, last_location_recorded_at = u.seen_at
      FROM unnest($1::uuid[], $2::timestamptz[], $3::float8[], $4::float8[]) AS u (id, seen_at, lat, lng)
     WHERE d.id = u.id`;
  return {
    async write(deviceIds, recordedAts) {
      const times = recordedAts.map((at) => new Date(at).toISOString());
      const lats = deviceIds.map(() => 51.9);
      const lngs = deviceIds.map(() => 4.4);
      const client = await pool.connect();
      try {
        // A deadlock with the DMS's own transactions, still committing the last batches of the scenario
        // before, is possible (the UPDATE locks rows in its join's order): rolled back and run again, as a
        // client of PostgreSQL would. It ended a run once (2026-11-28).
        for (;;) {
          try {
            await client.query('BEGIN');
            const { rowCount } = await client.query(insert, [tenantId, accountId, deviceIds, times, lats, lngs, deviceIds.map(() => 4.5)]);
            await client.query(move, [deviceIds, times, lats, lngs]);
            await client.query('COMMIT');
            return rowCount;
          } catch (error) {
            await client.query('ROLLBACK');
            if (error.code !== '40P01') throw error;
          }
        }
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

/** The profiles the services write (bench/lib/profiler-preload.mjs) once told to stop sampling. */
async function profiles(pids) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const files = existsSync(stack.profileDir) ? readdirSync(stack.profileDir).filter((name) => name.endsWith('.cpuprofile')) : [];
    const found = pids.map((pid) => files.find((name) => name.endsWith(`-${pid}.cpuprofile`)));
    if (found.every(Boolean)) return found.map((name) => join(stack.profileDir, name));
    await sleep(200);
  }
  throw new Error('the services did not write their profiles within 30 s');
}

/**
 * A Teltonika tracker over raw TCP, logged in with its IMEI: `send(packet)` resolves with the record count
 * the gateway acknowledged, or -1 when the connection closed first.
 */
function openTracker(port, imei) {
  return new Promise((resolve, reject) => {
    const socket = connectTcp({ host: '127.0.0.1', port });
    socket.setNoDelay(true);
    let pending = Buffer.alloc(0);
    let accepted = false;
    let waiting;
    const tracker = {
      send(packet) {
        return new Promise((answer) => {
          waiting = answer;
          socket.write(packet);
        });
      },
      close: () => socket.destroy(),
    };
    socket.on('data', (chunk) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      if (!accepted) {
        if (pending[0] !== 1) return reject(new Error(`IMEI ${imei} refused`));
        accepted = true;
        pending = pending.subarray(1);
        resolve(tracker);
      }
      while (pending.length >= 4) {
        const count = pending.readUInt32BE(0);
        pending = pending.subarray(4);
        const answer = waiting;
        waiting = undefined;
        answer?.(count);
      }
    });
    socket.on('error', (error) => (accepted ? undefined : reject(error)));
    socket.on('close', () => {
      waiting?.(-1);
      waiting = undefined;
    });
    socket.write(encodeHandshake(imei));
  });
}

/** CPU ms the whole machine spent busy so far (every core, every process), from /proc/stat. */
function machineCpuMs() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait (USER_HZ 100).
  const busy = fields.slice(0, 8).reduce((sum, value, i) => (i === 3 || i === 4 ? sum : sum + value), 0);
  return busy * 10;
}

function cpuLine(figures) {
  const { total, machineBusyPercent, ...parts } = figures;
  const listed = Object.entries(parts)
    .filter(([, value]) => value !== null && value >= 0.5)
    .sort(([, a], [, b]) => b - a)
    .map(([name, value]) => `${name} ${value}`)
    .join(', ');
  return `${total} (${listed}); machine busy ${machineBusyPercent} %`;
}
