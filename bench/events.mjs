#!/usr/bin/env node
// `npm run bench:events` (issue 20): webhook delivery, on databases of its own (bench_events_*), with the
// gateway, one OMS, one DMS and one OMS worker (the sender) as separate processes, and local receivers.
//
// 1. Throughput: BENCH_EVENTS_WEBHOOKS webhooks to a local receiver that answers 204 at once, plus one
//    webhook whose receiver never answers (each of its attempts holds a slot for the full 10 s timeout).
//    Each run commits BENCH_EVENTS_DELIVERIES / (webhooks + 1) events into the OMS outbox at once (every
//    webhook takes every event, the dead one too) and times the healthy deliveries from the commit to the
//    last one arriving, through relay, stream, dispatch and sender: sustained deliveries per second.
// 2. Latency, committed change -> webhook request, at BENCH_EVENTS_RATE changes per second:
//    - "outbox": events committed into the OMS outbox (as a change's transaction writes them), through
//      the relay, JetStream, the dispatch consumer and the sender;
//    - "api": shipments created and patched through the HTTP API, timed from the 2xx answer (the change is
//      committed) to the receiver. It needs the routes to write their events; when no event arrives it
//      says so and reports nothing.
// Prints the medians of BENCH_RUNS runs.
import { createServer } from 'node:http';
import pg from 'pg';
import { readBenchConfig } from './lib/config.mjs';
import { api, issueToken } from './lib/http.mjs';
import { median } from './lib/load.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import { provision, shipmentBody } from './lib/seed.mjs';
import { BenchStack, databaseNames, databaseUrl, resetDatabases, sleep } from './lib/stack.mjs';

const base = readBenchConfig();
const int = (name, fallback) => Number(process.env[name] ?? fallback);
const config = {
  ...base,
  prefix: process.env.BENCH_PREFIX ?? 'bench_events',
  webhooks: int('BENCH_EVENTS_WEBHOOKS', 4),
  deliveries: int('BENCH_EVENTS_DELIVERIES', 15000),
  rate: int('BENCH_EVENTS_RATE', 200),
  latencySeconds: int('BENCH_EVENTS_LATENCY_SECONDS', 10),
};
const stack = await new BenchStack(config, { services: ['oms', 'dms', 'worker', 'gateway'] }).prepare();
Object.assign(stack.env, {
  WEBHOOK_ALLOW_INSECURE: 'true',
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  OMS_DATABASE_POOL_SIZE: process.env.OMS_DATABASE_POOL_SIZE ?? '20',
  // One account makes every delivery here, far beyond the default hourly budget (docs/webhook-delivery.md, "Amplification bounds").
  WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR: process.env.WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR ?? '10000000',
});
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config }, throughput: [], latency: {} };

/** The receiver: `/ok/*` answers 204, `/dead` never answers; arrivals by webhook-id. */
function startReceiver() {
  const arrivals = new Map();
  const markers = new Map();
  const hanging = new Set();
  let healthy = 0;
  const server = createServer((request, response) => {
    if (request.url === '/dead') {
      hanging.add(response);
      request.resume();
      return;
    }
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const now = performance.now();
      healthy++;
      arrivals.set(request.headers['webhook-id'], now);
      // For the API runs: the changes carry unique names (creates) and carriers (patches).
      if (request.url === '/ok/0') {
        const data = JSON.parse(Buffer.concat(chunks).toString()).data ?? {};
        for (const marker of [data.name, data.carrier]) if (typeof marker === 'string' && !markers.has(marker)) markers.set(marker, now);
      }
      response.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: (path) => `http://127.0.0.1:${server.address().port}${path}`,
        arrivals,
        markers,
        healthyCount: () => healthy,
        close: () => {
          for (const response of hanging) response.destroy();
          server.closeAllConnections();
          server.close();
        },
      }),
    ),
  );
}

async function waitFor(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs / 1000} s`);
    await sleep(5);
  }
}

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function throughputRun(db, receiver, hooks, healthyCount, accountId, tenantId, run) {
  const before = receiver.healthyCount();
  const events = Math.floor(config.deliveries / hooks);
  const healthyTotal = events * healthyCount;
  const started = performance.now();
  // Committed into the outbox as changes' transactions write events: relay, stream, dispatch, sender.
  await db.query(
    `INSERT INTO outbox (msg_id, subject, payload)
     SELECT e, $3, json_build_object('tenantId', $1::uuid, 'event', json_build_object('id', e, 'type', 'shipment.updated',
       'occurredAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'accountId', $2::uuid, 'data', json_build_object('run', $4::int)))::text
     FROM (SELECT gen_random_uuid() AS e FROM generate_series(1, $5::int)) AS g`,
    [tenantId, accountId, `events.${tenantId}.${accountId}.shipment.updated`, run, events],
  );
  await waitFor(() => receiver.healthyCount() - before >= healthyTotal, 300000, `run ${run}: ${healthyTotal} healthy deliveries`);
  const seconds = (performance.now() - started) / 1000;
  return { events, healthyDeliveries: healthyTotal, seconds: Math.round(seconds * 100) / 100, perSecond: Math.round(healthyTotal / seconds) };
}

/** Fires `count` changes at `rate` per second; `change(i)` resolves with the event ids to wait for, at commit time. */
async function latencyRun(receiver, count, change) {
  const pending = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const due = started + (i * 1000) / config.rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(change(i));
  }
  const committed = await Promise.all(pending);
  const deadline = Date.now() + 30000;
  const latencies = [];
  for (const { match, at } of committed) {
    let arrived;
    while ((arrived = match()) === undefined && Date.now() < deadline) await sleep(5);
    if (arrived !== undefined) latencies.push(Math.max(0, arrived - at));
  }
  return latencies;
}

async function main() {
  const names = databaseNames(config);
  print(`Events benchmark: ${config.deliveries} deliveries × ${config.runs} runs over ${config.webhooks} healthy webhooks + 1 that never answers; latency at ${config.rate} changes/s`);
  await resetDatabases(config, [names.gateway, names.oms, names.dms]);
  const { credentials, writeAccountId: accountId } = provision(stack);
  results.startup = await stack.start('events');
  const token = await issueToken(stack.base, credentials);
  const receiver = await startReceiver();
  const db = new pg.Client({ connectionString: databaseUrl(config, names.oms) });
  await db.connect();
  try {
    const hookPath = `/v1/accounts/${accountId}/webhooks`;
    const healthyHooks = [];
    for (let i = 0; i < config.webhooks; i++) {
      const { body } = await api(stack.base, 'POST', hookPath, { token, body: { url: receiver.url(`/ok/${i}`), eventTypes: ['*'] } });
      healthyHooks.push(body.id);
    }
    const { body: dead } = await api(stack.base, 'POST', hookPath, { token, body: { url: receiver.url('/dead'), eventTypes: ['*'] } });

    // Warm-up, then the measured runs.
    await throughputRun(db, receiver, healthyHooks.length + 1, healthyHooks.length, accountId, credentials.tenantId, 0);
    for (let run = 1; run <= config.runs; run++) {
      const result = await throughputRun(db, receiver, healthyHooks.length + 1, healthyHooks.length, accountId, credentials.tenantId, run);
      results.throughput.push(result);
      print(`  throughput run ${run}: ${result.healthyDeliveries} deliveries in ${result.seconds} s = ${result.perSecond}/s`);
    }
    // The dead webhook's backlog would hold its slots in the latency runs too; it goes.
    await api(stack.base, 'DELETE', `${hookPath}/${dead.id}`, { token });
    await sleep(1000);

    const count = config.rate * config.latencySeconds;
    const outboxClient = new pg.Pool({ connectionString: databaseUrl(config, names.oms), max: 8 });
    const outboxRuns = [];
    for (let run = 1; run <= config.runs; run++) {
      const latencies = await latencyRun(receiver, count, async () => {
        const id = crypto.randomUUID();
        const event = { id, type: 'shipment.updated', occurredAt: new Date().toISOString(), accountId, data: { bench: true } };
        await outboxClient.query('INSERT INTO outbox (msg_id, subject, payload) VALUES ($1, $2, $3)', [
          id,
          `events.${credentials.tenantId}.${accountId}.shipment.updated`,
          JSON.stringify({ tenantId: credentials.tenantId, event }),
        ]);
        // Every healthy webhook takes every event: the last of them to arrive.
        const at = performance.now();
        return { at, match: () => receiver.arrivals.get(id) };
      });
      outboxRuns.push({ p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)), received: latencies.length, sent: count });
      print(`  outbox latency run ${run}: p50 ${outboxRuns.at(-1).p50} ms, p99 ${outboxRuns.at(-1).p99} ms (${latencies.length}/${count} arrived)`);
    }
    await outboxClient.end();
    results.latency.outbox = outboxRuns;

    // Through the API: does a created shipment produce an event at all on this build?
    await api(stack.base, 'POST', `/v1/accounts/${accountId}/shipments`, { token, body: shipmentBody('EVT', 0) });
    const countBefore = receiver.healthyCount();
    await sleep(3000);
    if (receiver.healthyCount() === countBefore) {
      print('  api latency: skipped, creating a shipment produced no webhook request within 3 s (the routes write no events on this build)');
      results.latency.api = 'skipped: no events from the routes';
    } else {
      const apiRuns = [];
      // PATCHes spread over 50 shipments: 100 a second on one row would measure that row's lock queue, not the path.
      const patched = [];
      for (let i = 0; i < 50; i++) patched.push((await api(stack.base, 'POST', `/v1/accounts/${accountId}/shipments`, { token, body: shipmentBody('PATCHED', i) })).body.id);
      await sleep(2000);
      for (let run = 1; run <= config.runs; run++) {
        const latencies = await latencyRun(receiver, count, async (i) => {
          const path = `/v1/accounts/${accountId}/shipments`;
          const body = shipmentBody(`EVT${run}`, i);
          const marker = i % 2 === 0 ? body.name : `Carrier ${run}-${i}`;
          if (i % 2 === 0) await api(stack.base, 'POST', path, { token, body });
          else await api(stack.base, 'PATCH', `${path}/${patched[i % patched.length]}`, { token, body: { carrier: marker } });
          const at = performance.now();
          return { at, match: () => receiver.markers.get(marker) };
        });
        apiRuns.push({ p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)), received: latencies.length, sent: count });
        print(`  API latency run ${run}: p50 ${apiRuns.at(-1).p50} ms, p99 ${apiRuns.at(-1).p99} ms (${latencies.length}/${count} arrived)`);
      }
      results.latency.api = apiRuns;
    }

    print();
    print(
      table(
        ['measure', 'median of runs', 'goal'],
        [
          ['deliveries/s, 1 receiver hanging', median(results.throughput.map((r) => r.perSecond)), '>= 1000'],
          ['outbox -> webhook p50 ms', median(outboxRuns.map((r) => r.p50)), '<= 100'],
          ['outbox -> webhook p99 ms', median(outboxRuns.map((r) => r.p99)), '<= 500'],
          ...(Array.isArray(results.latency.api)
            ? [
                ['API change -> webhook p50 ms', median(results.latency.api.map((r) => r.p50)), '<= 100'],
                ['API change -> webhook p99 ms', median(results.latency.api.map((r) => r.p99)), '<= 500'],
              ]
            : []),
        ],
      ),
    );
    print(`\nResults: ${writeResults('events.json', results)}`);
  } finally {
    await db.end();
    receiver.close();
  }
}

let exitCode = 0;
try {
  await main();
} catch (error) {
  process.stderr.write(`\nbench:events failed: ${error.stack ?? error}\n`);
  exitCode = 1;
} finally {
  await stack.close();
}
process.exit(exitCode);
