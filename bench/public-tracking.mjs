#!/usr/bin/env node
// `npm run bench:public-tracking` (issue 34): what a flood of guessed share-link tokens costs, against what
// the gateway's cheapest answers cost in the same run. With the rate limit lifted (as every bench does), it
// sends BENCH_PUBLIC_REQUESTS (default 2000) requests, BENCH_PUBLIC_CONCURRENCY (default 8) at a time, of:
//   - `reference: JWKS`: GET /v1/.well-known/jwks.json, a gateway-only answer from memory;
//   - `malformed token`: GET /v1/public/tracking/x, refused by the gateway's format check (no NATS, no SQL);
//   - `random token`: a well-formed random token: one NATS request and one probe of the digest index
//     among BENCH_PUBLIC_LINKS (default 100000) stored links, answered 404;
//   - `live link`: the full view of a link whose shipment has a 1000-position track (OMS lookup, visits, DMS track);
// and prints requests per second, p50/p99 latency and CPU ms per request of the gateway, OMS, DMS and
// PostgreSQL, with the load average (a loaded machine moves latency; CPU per request moves far less).
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import pg from 'pg';
import { CpuMeter } from './lib/cpu.mjs';
import { readBenchConfig } from './lib/config.mjs';
import { api, inPool, issueToken } from './lib/http.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import { provision } from './lib/seed.mjs';
import { BenchStack, analyzeDatabases, databaseNames, databaseUrl, resetDatabases } from './lib/stack.mjs';

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const config = {
  ...readBenchConfig(),
  prefix: 'bench_public',
  requests: env('BENCH_PUBLIC_REQUESTS', 2000),
  concurrency: env('BENCH_PUBLIC_CONCURRENCY', 8),
  links: env('BENCH_PUBLIC_LINKS', 100000),
  positions: 1000,
};
const stack = await new BenchStack(config, { services: ['oms', 'dms', 'gateway'] }).prepare();
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config }, variants: {} };

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const names = databaseNames(config);
  print(`Public tracking benchmark: ${config.requests} requests per variant, ${config.concurrency} at a time, ${config.links} stored links`);
  await resetDatabases(config, [names.gateway, names.oms, names.dms]);
  const { credentials, readAccountId: accountId } = provision(stack);
  results.startup = await stack.start('public-tracking');
  const token = await issueToken(stack.base, credentials);
  const at = `/v1/accounts/${accountId}`;

  const { body: shipment } = await api(stack.base, 'POST', `${at}/shipments`, { token, body: { name: 'Shared shipment' } });
  const { body: set } = await api(stack.base, 'POST', `${at}/shipments/${shipment.id}/sets`, { token, body: { name: 'Pallet 1', kind: 'Pallet' } });
  const { body: device } = await api(stack.base, 'POST', `${at}/devices`, { token, body: { serialNumber: `PUBLIC-${Date.now()}`, model: 'Bench' } });
  await api(stack.base, 'PUT', `${at}/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`, { token });
  const from = Date.now() + 1;
  await new Promise((resolve) => setTimeout(resolve, 50));
  const readings = Array.from({ length: config.positions }, (_v, i) => ({
    deviceId: device.id,
    recordedAt: new Date(from + i).toISOString(),
    location: { lat: 51.9 - i * 0.0004, lng: 4.4 + Math.sin(i / 20) * 0.01 },
  }));
  await new Promise((resolve) => setTimeout(resolve, config.positions));
  await api(stack.base, 'POST', `${at}/readings`, { token, body: { readings } });
  const { body: link } = await api(stack.base, 'POST', `${at}/shipments/${shipment.id}/share-links`, { token, body: {} });
  const liveToken = new URL(link.url).pathname.split('/').pop();

  // Other links in the digest index, as a busy system would have them: random 32-byte digests.
  const oms = new pg.Client({ connectionString: databaseUrl(config, names.oms) });
  await oms.connect();
  await oms.query(
    `INSERT INTO share_links (id, tenant_id, account_id, shipment_id, token_digest, expires_at, created_at)
     SELECT gen_random_uuid(), tenant_id, account_id, id, decode(md5(random()::text) || md5(random()::text), 'hex'), now() + interval '7 days', now()
       FROM shipments, generate_series(1, $2) WHERE id = $1`,
    [shipment.id, config.links],
  );
  await oms.end();
  await analyzeDatabases(config, [names.oms]);

  const cpu = new CpuMeter(databaseUrl(config, 'postgres'), () => stack.pids(), [names.gateway, names.oms, names.dms]);
  const variants = [
    ['reference: JWKS', () => '/v1/.well-known/jwks.json', 200],
    ['malformed token', () => '/v1/public/tracking/x', 404],
    ['random token', () => `/v1/public/tracking/${randomBytes(16).toString('base64url')}`, 404],
    ['live link (1000 positions)', () => `/v1/public/tracking/${liveToken}`, 200],
  ];
  const rows = [];
  for (const [name, path, status] of variants) {
    // Warm-up: connections, prepared plans, JIT.
    await inPool(`${name} (warm-up)`, 100, config.concurrency, () => fetch(stack.base + path()).then((r) => r.arrayBuffer()));
    const before = await cpu.sample();
    const load = loadavg()[0];
    const { results: latencies, perSecond } = await inPool(name, config.requests, config.concurrency, async () => {
      const started = performance.now();
      const response = await fetch(stack.base + path());
      await response.arrayBuffer();
      if (response.status !== status) throw new Error(`${name}: ${response.status}, expected ${status}`);
      return performance.now() - started;
    });
    const perRequest = CpuMeter.perRequest(before, await cpu.sample(), config.requests);
    const round = (value) => Math.round(value * 10) / 10;
    results.variants[name] = { perSecond, p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), cpuMsPerRequest: perRequest, loadAverage: round(load) };
    rows.push([name, perSecond, round(percentile(latencies, 50)), round(percentile(latencies, 99)), perRequest.gateway, perRequest.oms, perRequest.dms, perRequest.postgres, perRequest.total, round(load)]);
  }
  print();
  print(table(['variant', 'req/s', 'p50 ms', 'p99 ms', 'gateway CPU ms/req', 'oms', 'dms', 'postgres', 'total', 'load avg'], rows));
  print(`\nAll figures: ${writeResults('public-tracking-latest.json', results)}`);
}

try {
  await main();
} finally {
  await stack.stop();
}
