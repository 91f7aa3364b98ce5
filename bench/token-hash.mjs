#!/usr/bin/env node
// What checking application secrets costs, and what the token endpoint's bounds buy (issue 18):
// 1. the cost of one scrypt hash as the gateway stores secrets (N=16384, r=8, p=1) and of one
//    HMAC-SHA256, in this process, median of many;
// 2. a gateway, OMS and DMS on databases of their own (bench_token_*), under BOGUS bogus token
//    requests (wrong secrets) from 10 client addresses sent at once: the latency of a good client's
//    token refresh (its secret matched before), of a first token request of another application, and
//    of GET shipments meanwhile; BENCH_RUNS runs per setting, medians. Two settings: the defaults
//    (TOKEN_HASH_CONCURRENCY=2, TOKEN_HASH_QUEUE=16) and no effective bound (64 / 10000), which is how
//    the gateway hashed before. Rate limits are off, as for an attacker with many addresses.
//   npm run -s build && node bench/token-hash.mjs
import { createHmac, randomBytes, scryptSync } from 'node:crypto';
import { readBenchConfig } from './lib/config.mjs';
import { api, issueToken } from './lib/http.mjs';
import { median } from './lib/load.mjs';
import { print, table } from './lib/report.mjs';
import { provision } from './lib/seed.mjs';
import { BenchStack, databaseNames, resetDatabases, sleep } from './lib/stack.mjs';

const BOGUS = Number(process.env.BENCH_BOGUS ?? 200);
const ADDRESSES = 10;
const config = { ...readBenchConfig(), prefix: 'bench_token' };

function hashCosts() {
  const secret = randomBytes(32).toString('base64url');
  const scrypt = [];
  for (let i = 0; i < 15; i++) {
    const started = performance.now();
    scryptSync(secret, randomBytes(16), 32, { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
    scrypt.push(performance.now() - started);
  }
  const hmac = [];
  const key = randomBytes(32);
  for (let batch = 0; batch < 15; batch++) {
    const started = performance.now();
    for (let i = 0; i < 10000; i++) createHmac('sha256', key).update(secret).digest();
    hmac.push(((performance.now() - started) * 1000) / 10000);
  }
  return { scryptMs: median(scrypt), hmacMicros: median(hmac) };
}

async function timed(task) {
  const started = performance.now();
  const result = await task();
  return { ms: performance.now() - started, result };
}

function tokenRequest(base, body, address) {
  return fetch(`${base}/v1/applications/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(address ? { 'x-forwarded-for': address } : {}) },
    body: JSON.stringify(body),
  }).then(async (response) => {
    await response.arrayBuffer();
    return response.status;
  });
}

async function run(stack, good, fresh, token, accountId) {
  // The good client's secret has matched before: its refresh is answered from memory.
  await issueToken(stack.base, good);
  const started = performance.now();
  let drainMs;
  const bogus = Promise.all(
    Array.from({ length: BOGUS }, (_, index) =>
      tokenRequest(stack.base, { ...good, applicationSecret: randomBytes(32).toString('base64url') }, `198.51.100.${index % ADDRESSES}`),
    ),
  ).then((statuses) => {
    drainMs = performance.now() - started;
    return statuses;
  });
  // Everything below runs while the bogus requests are being answered.
  const gets = (async () => {
    const times = [];
    while (drainMs === undefined) times.push((await timed(() => api(stack.base, 'GET', `/v1/accounts/${accountId}/shipments?limit=10`, { token }))).ms);
    return times;
  })();
  const [refresh, first] = await Promise.all([timed(() => tokenRequest(stack.base, good)), timed(() => tokenRequest(stack.base, fresh()))]);
  const statuses = await bogus;
  const getTimes = await gets;
  return {
    refreshMs: refresh.ms,
    refreshStatus: refresh.result,
    firstMs: first.ms,
    firstStatus: first.result,
    getP50Ms: median(getTimes),
    gets: getTimes.length,
    refused503: statuses.filter((status) => status === 503).length,
    drainMs,
  };
}

async function main() {
  const costs = hashCosts();
  print(`scrypt N=16384 r=8 p=1: ${costs.scryptMs.toFixed(1)} ms per hash; HMAC-SHA256: ${costs.hmacMicros.toFixed(2)} µs (median of 15)`);
  process.env.TRUST_PROXY = '127.0.0.1';
  const rows = [];
  for (const [label, concurrency, queue] of [
    ['bounded (defaults 2 / 16)', '2', '16'],
    ['unbounded (64 / 10000)', '64', '10000'],
  ]) {
    process.env.TOKEN_HASH_CONCURRENCY = concurrency;
    process.env.TOKEN_HASH_QUEUE = queue;
    const names = databaseNames(config);
    await resetDatabases(config, [names.gateway, names.oms, names.dms]);
    const stack = await new BenchStack(config, { services: ['oms', 'dms', 'gateway'] }).prepare();
    try {
      const { credentials, readAccountId } = provision(stack);
      const spares = Array.from({ length: config.runs + 1 }, () =>
        stack.admin('application', 'create', '--tenant', credentials.tenantId, '--name', 'Spare', '--role', 'Viewer', '--accounts', '*'),
      );
      const fresh = () => ({ tenantId: credentials.tenantId, ...spares.pop() });
      await stack.start('token-hash');
      const token = await issueToken(stack.base, credentials);
      await run(stack, credentials, fresh, token, readAccountId); // warm-up
      const runs = [];
      for (let i = 0; i < config.runs; i++) runs.push(await run(stack, credentials, fresh, token, readAccountId));
      const m = (key) => median(runs.map((entry) => entry[key]));
      rows.push([
        label,
        `${m('refreshMs').toFixed(0)} ms (${runs.map((entry) => entry.refreshStatus).join('/')})`,
        `${m('firstMs').toFixed(0)} ms (${runs.map((entry) => entry.firstStatus).join('/')})`,
        `${m('getP50Ms').toFixed(1)} ms`,
        `${m('refused503')} of ${BOGUS}`,
        `${m('drainMs').toFixed(0)} ms`,
      ]);
    } finally {
      await stack.close();
    }
  }
  print(`\n${BOGUS} bogus token requests from ${ADDRESSES} addresses at once; medians of ${config.runs} runs`);
  print(table(['hashing', 'good refresh', 'first token (new app)', 'GET p50 meanwhile', 'bogus answered 503', 'all bogus answered'], rows));
}

await main();
