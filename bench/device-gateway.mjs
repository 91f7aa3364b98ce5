#!/usr/bin/env node
// `npm run bench:device-gateway` (issue 31): the device gateway's core under many trackers, each sending
// one reading per message with one message in flight (as an MQTT device at QoS 1 does), against the
// JSON API's batch ingest measured in the same run. Trackers here speak HTTP (`POST /v1/readings`, one
// reading, a keep-alive connection per device): what the MQTT and Teltonika listeners add on top of the
// sink and the DMS is their own protocol work.
//
// Alternates BENCH_RUNS runs of BENCH_DURATION seconds of three scenarios: the device gateway's process
// over HTTP (BENCH_DEVICE_CONNECTIONS devices, default 500); its sink alone, in this process, with
// BENCH_SINK_DEVICES (default 2000) devices each submitting one reading at a time (what an MQTT listener
// asks of it, without MQTT); and the API (batches of 1000 readings, 4 in flight). Prints readings/s,
// p50/p99 of a message or a batch, the ratios, and the load average. Rate limits are off (as in every
// benchmark).
import autocannon from 'autocannon';
import { loadavg } from 'node:os';
import { createLogger } from '@tracking/core';
import { ServiceMetrics } from '@tracking/observability';
import { readDeviceGatewayConfig } from '../apps/device-gateway/dist/config.js';
import { startDeviceGateway } from '../apps/device-gateway/dist/device-gateway.js';
import { readBenchConfig } from './lib/config.mjs';
import { api, inPool, issueToken } from './lib/http.mjs';
import { median } from './lib/load.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import { provision, seedDevices } from './lib/seed.mjs';
import { BenchStack, databaseNames, resetDatabases } from './lib/stack.mjs';

const base = readBenchConfig();
const config = {
  ...base,
  prefix: 'bench_devices',
  deviceConnections: Number(process.env.BENCH_DEVICE_CONNECTIONS ?? 500),
  sinkDevices: Number(process.env.BENCH_SINK_DEVICES ?? 2000),
  apiBatch: 1000,
  apiInFlight: 4,
};
await resetDatabases(config, Object.values(databaseNames(config)));
const stack = await new BenchStack(config, { services: ['oms', 'dms', 'gateway', 'device-gateway'] }).prepare();
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config }, runs: [] };
try {
  print(`starting the stack (${config.deviceConnections} devices)...`);
  await stack.start('device-gateway');
  const { credentials, writeAccountId } = provision(stack);
  const token = await issueToken(stack.base, credentials);
  const { results: deviceIds } = await seedDevices(stack.base, token, writeAccountId, Math.max(config.deviceConnections, config.sinkDevices), 8, 'TRACKER');
  const { results: secrets } = await inPool('credentials', deviceIds.length, 8, async (index) => {
    const { body } = await api(stack.base, 'POST', `/v1/accounts/${writeAccountId}/devices/${deviceIds[index]}/credentials`, { token, body: { protocol: 'Http' } });
    return body.secret;
  });
  const deviceBase = `http://127.0.0.1:${stack.ports.deviceHttp}`;
  // Every reading gets its own recordedAt, one millisecond apart per device: never a duplicate.
  let clock = Date.now() - 3_600_000;

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
  // The sink in this process, on the stack's NATS and Redis, without listeners.
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

  if (config.warmup > 0) {
    await deviceRun(config.warmup);
    await sinkRun(config.warmup);
    await apiRun(config.warmup);
  }
  for (let run = 1; run <= config.runs; run++) {
    const loadBefore = loadavg()[0];
    const device = figures(await deviceRun(config.duration), 1);
    const sink = await sinkRun(config.duration);
    const reference = figures(await apiRun(config.duration), config.apiBatch);
    results.runs.push({ run, loadAverage: Math.round(loadBefore * 100) / 100, device, sink, api: reference });
    print(
      `run ${run}: device HTTP ${device.readingsPerSecond}/s (p99 ${device.p99} ms), sink ${sink.readingsPerSecond}/s (p99 ${sink.p99} ms), ` +
        `API ${reference.readingsPerSecond}/s, load ${loadBefore.toFixed(2)}`,
    );
  }
  await sinkGateway.stop();
  const med = (pick) => median(results.runs.map(pick));
  const device = med((r) => r.device.readingsPerSecond);
  const reference = med((r) => r.api.readingsPerSecond);
  print();
  print(
    table(
      ['scenario', 'readings/s', 'p50 ms', 'p99 ms', 'non-2xx'],
      [
        [`device gateway over HTTP, ${config.deviceConnections} devices, 1 reading per message`, device, med((r) => r.device.p50), med((r) => r.device.p99), med((r) => r.device.non2xx)],
        [`its sink alone, ${config.sinkDevices} devices, 1 reading per submit`, med((r) => r.sink.readingsPerSecond), med((r) => r.sink.p50), med((r) => r.sink.p99), med((r) => r.sink.non2xx)],
        [`JSON API, ${config.apiBatch} per batch, ${config.apiInFlight} in flight`, reference, med((r) => r.api.p50), med((r) => r.api.p99), med((r) => r.api.non2xx)],
      ],
    ),
  );
  const sink = med((r) => r.sink.readingsPerSecond);
  print(`device gateway over HTTP / API: ${(device / Math.max(1, reference)).toFixed(2)}x; sink / API: ${(sink / Math.max(1, reference)).toFixed(2)}x; load average ${med((r) => r.loadAverage)}`);
  results.summary = { device, sink, api: reference, ratio: device / Math.max(1, reference), sinkRatio: sink / Math.max(1, reference) };
  writeResults('device-gateway', results);
} finally {
  await stack.close();
}
