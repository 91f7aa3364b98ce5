#!/usr/bin/env node
// `npm run bench:device-gateway` (issue 31): the device gateway's core under many trackers, each sending
// one reading per message with one message in flight (as an MQTT device at QoS 1 does), against the
// JSON API's batch ingest measured in the same run. Trackers here speak HTTP (`POST /v1/readings`, one
// reading, a keep-alive connection per device): what the MQTT and Teltonika listeners add on top of the
// sink and the DMS is their own protocol work.
//
// Alternates BENCH_RUNS runs of BENCH_DURATION seconds: device gateway (BENCH_DEVICE_CONNECTIONS devices,
// default 500) and API (batches of 1000 readings, 4 in flight). Prints readings/s, p50/p99 of a message
// (device) or a batch (API), the ratio, and the load average. Rate limits are off (as in every benchmark).
import autocannon from 'autocannon';
import { loadavg } from 'node:os';
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
  const { results: deviceIds } = await seedDevices(stack.base, token, writeAccountId, config.deviceConnections, 8, 'TRACKER');
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
  const figures = (result, perRequest) => ({
    readingsPerSecond: Math.round((result['2xx'] * perRequest) / result.duration),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  });

  if (config.warmup > 0) {
    await deviceRun(config.warmup);
    await apiRun(config.warmup);
  }
  for (let run = 1; run <= config.runs; run++) {
    const loadBefore = loadavg()[0];
    const device = figures(await deviceRun(config.duration), 1);
    const reference = figures(await apiRun(config.duration), config.apiBatch);
    results.runs.push({ run, loadAverage: Math.round(loadBefore * 100) / 100, device, api: reference });
    print(`run ${run}: device ${device.readingsPerSecond}/s (p99 ${device.p99} ms), API ${reference.readingsPerSecond}/s, load ${loadBefore.toFixed(2)}`);
  }
  const med = (pick) => median(results.runs.map(pick));
  const device = med((r) => r.device.readingsPerSecond);
  const reference = med((r) => r.api.readingsPerSecond);
  print();
  print(
    table(
      ['scenario', 'readings/s', 'p50 ms', 'p99 ms', 'non-2xx'],
      [
        [`device gateway, ${config.deviceConnections} devices, 1 reading per message`, device, med((r) => r.device.p50), med((r) => r.device.p99), med((r) => r.device.non2xx)],
        [`JSON API, ${config.apiBatch} per batch, ${config.apiInFlight} in flight`, reference, med((r) => r.api.p50), med((r) => r.api.p99), med((r) => r.api.non2xx)],
      ],
    ),
  );
  print(`device gateway / API: ${(device / Math.max(1, reference)).toFixed(2)}x; load average ${med((r) => r.loadAverage)}`);
  results.summary = { device, api: reference, ratio: device / Math.max(1, reference) };
  writeResults('device-gateway', results);
} finally {
  await stack.close();
}
