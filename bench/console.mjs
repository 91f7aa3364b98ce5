#!/usr/bin/env node
// `npm run bench:console` (issue 34): how long a person waits for the map. In Debian's Chromium
// (playwright-core, WebGL on SwiftShader as on CI: software rendering, so slower than a laptop's GPU), it
// measures BENCH_RUNS times (default 5), each in a fresh browser profile (nothing cached), the time from
// navigation to the first frame with the track drawn (the map loaded, its sources parsed, the `track`
// layer rendering features) of:
//   - the tracking page `GET /track/{token}` of a share link whose shipment has 1,000 positions (the
//     public view sends at most 500);
//   - the console's shipment page (`/console#/a/{account}/shipments/{id}`, signed in: the session is put
//     in sessionStorage before the page loads, so the scrypt of a sign-in is not counted) of a shipment with
//     BENCH_CONSOLE_POSITIONS (default 100,000) positions, drawn with maxPoints=2000;
//   - the same page for a shipment with 1,000 positions: the reference in the same run;
// and, without a browser, the track request the page makes (`GET .../track?maxPoints=2000`,
// application/geo+json) for both shipments. Prints the median, min and max of each with the load
// average. Set BENCH_PREFIX (default bench_console) so that its databases do not collide with another's.
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { chromium } from 'playwright-core';
import { readBenchConfig } from './lib/config.mjs';
import { api, issueToken } from './lib/http.mjs';
import { machine, print, table, writeResults } from './lib/report.mjs';
import { provision } from './lib/seed.mjs';
import { BenchStack, databaseNames, resetDatabases, sleep } from './lib/stack.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const env = (name, fallback) => Number(process.env[name] ?? fallback);
const config = {
  ...readBenchConfig(),
  prefix: process.env.BENCH_PREFIX ?? 'bench_console',
  runs: env('BENCH_RUNS', 5),
  positions: env('BENCH_CONSOLE_POSITIONS', 100000),
  referencePositions: 1000,
  maxPoints: 2000,
};
if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium, or set CHROMIUM_PATH`);
const stack = await new BenchStack(config, { services: ['oms', 'dms', 'gateway'] }).prepare();
// BENCH_PORT (and the 7 ports after it) instead of free ports, for machines where each user has a range.
if (process.env.BENCH_PORT) {
  const first = Number(process.env.BENCH_PORT);
  ['http', 'gateway', 'oms', 'dms', 'worker', 'worker2', 'device-gateway', 'deviceHttp'].forEach((name, i) => (stack.ports[name] = first + i));
  stack.env.PORT = String(stack.ports.http);
  stack.env.DEVICE_HTTP_PORT = String(stack.ports.deviceHttp);
  stack.env.DEVICE_MQTT_PORT = '0';
  stack.base = `http://127.0.0.1:${stack.ports.http}`;
}
const results = { startedAt: new Date().toISOString(), machine: machine(), config: { ...config }, variants: {} };

/** The same switches as the browser tests (test/support/browser.ts): software WebGL, nothing that calls home. */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--use-angle=swiftshader',
  '--enable-unsafe-swiftshader',
  '--ignore-gpu-blocklist',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-domain-reliability',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-quic',
];

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const round = (value) => Math.round(value);

async function main() {
  const names = databaseNames(config);
  print(`Console benchmark: ${config.runs} runs per variant; a ${config.positions}-position track against a ${config.referencePositions}-position one`);
  await resetDatabases(config, [names.gateway, names.oms, names.dms]);
  const { credentials, readAccountId: accountId } = provision(stack);
  results.startup = await stack.start('console');
  const token = await issueToken(stack.base, credentials);
  const at = `/v1/accounts/${accountId}`;

  const seeded = {};
  for (const [key, count] of [
    ['big', config.positions],
    ['reference', config.referencePositions],
  ]) {
    const started = performance.now();
    seeded[key] = await shipmentWithTrack(token, accountId, `Console bench ${count}`, count);
    print(`  seeded ${count} positions in ${round((performance.now() - started) / 1000)} s`);
  }
  // The shipment's track reaches the OMS through the readings stream: wait for the last position.
  for (const { shipment } of Object.values(seeded)) {
    for (let i = 0; ; i++) {
      const { body } = await api(stack.base, 'GET', `${at}/shipments/${shipment.id}`, { token });
      if (body.lastPosition) break;
      if (i > 600) throw new Error('no last position after 60 s');
      await sleep(100);
    }
  }
  const { body: link } = await api(stack.base, 'POST', `${at}/shipments/${seeded.reference.shipment.id}/share-links`, { token, body: {} });
  const trackingToken = new URL(link.url).pathname.split('/').pop();

  // The track request the console makes, without a browser.
  const trackRows = [];
  for (const [key, label] of [
    ['big', `track API, ${config.positions} positions`],
    ['reference', `track API, ${config.referencePositions} positions (reference)`],
  ]) {
    const path = `${at}/shipments/${seeded[key].shipment.id}/track?maxPoints=${config.maxPoints}`;
    const times = [];
    for (let run = 0; run <= config.runs; run++) {
      const started = performance.now();
      const response = await fetch(stack.base + path, { headers: { authorization: `Bearer ${token}`, accept: 'application/geo+json' } });
      const body = await response.json();
      if (!response.ok) throw new Error(`${path}: ${response.status}`);
      if (run > 0) times.push(performance.now() - started);
      results.variants[label] = { points: body.features.reduce((n, f) => n + f.geometry.coordinates.length, 0) };
    }
    Object.assign(results.variants[label], { medianMs: round(median(times)), minMs: round(Math.min(...times)), maxMs: round(Math.max(...times)), loadAverage: loadavg()[0] });
    trackRows.push([label, results.variants[label].points, round(median(times)), round(Math.min(...times)), round(Math.max(...times)), loadavg()[0].toFixed(1)]);
  }

  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const session = JSON.stringify({ accessToken: token, expiresAt: Date.now() + 3600_000, tenantId: credentials.tenantId, applicationId: credentials.applicationId });
  const pageRows = [];
  try {
    const variants = [
      ['tracking page, 1000 positions (500 drawn)', `${stack.base}/track/${trackingToken}`, 'trackingPage', false],
      [`console shipment page, ${config.positions} positions`, `${stack.base}/console#/a/${accountId}/shipments/${seeded.big.shipment.id}`, 'trackingConsole', true],
      [
        `console shipment page, ${config.referencePositions} positions (reference)`,
        `${stack.base}/console#/a/${accountId}/shipments/${seeded.reference.shipment.id}`,
        'trackingConsole',
        true,
      ],
    ];
    // Warm-up: the gateway's file cache and Chromium's start, not counted.
    for (const [, url, global, signedIn] of variants) await firstPaint(browser, url, global, signedIn ? session : null);
    for (const [label, url, global, signedIn] of variants) {
      const times = [];
      const loads = [];
      for (let run = 0; run < config.runs; run++) {
        loads.push(loadavg()[0]);
        times.push(await firstPaint(browser, url, global, signedIn ? session : null));
      }
      const load = median(loads);
      results.variants[label] = { medianMs: round(median(times)), minMs: round(Math.min(...times)), maxMs: round(Math.max(...times)), runs: times.map(round), loadAverage: load };
      pageRows.push([label, round(median(times)), round(Math.min(...times)), round(Math.max(...times)), load.toFixed(1)]);
    }
  } finally {
    await browser.close();
  }
  print();
  print(table(['request', 'points answered', 'median ms', 'min ms', 'max ms', 'load avg'], trackRows));
  print();
  print(table(['page: navigation to the first frame with the track drawn', 'median ms', 'min ms', 'max ms', 'load avg'], pageRows));
  print(`\nAll figures: ${writeResults('console-latest.json', results)}`);
}

/** A shipment with origin and destination and one device that recorded `count` positions on the way, one a millisecond. */
async function shipmentWithTrack(token, accountId, name, count) {
  const at = `/v1/accounts/${accountId}`;
  const poi = async (label, lat, lng) =>
    (await api(stack.base, 'POST', `${at}/points-of-interest`, { token, body: { name: label, kind: 'Warehouse', location: { lat, lng }, radiusMeters: 1000 } })).body;
  const origin = await poi(`${name} origin`, 51.9, 4.4);
  const destination = await poi(`${name} destination`, 45.46, 9.19);
  const { body: shipment } = await api(stack.base, 'POST', `${at}/shipments`, { token, body: { name, originId: origin.id, destinationId: destination.id } });
  const { body: set } = await api(stack.base, 'POST', `${at}/shipments/${shipment.id}/sets`, { token, body: { name: 'Pallet 1', kind: 'Pallet' } });
  const { body: device } = await api(stack.base, 'POST', `${at}/devices`, { token, body: { serialNumber: `CONSOLE-${count}-${Date.now()}`, model: 'Bench' } });
  await api(stack.base, 'PUT', `${at}/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`, { token });
  // Dated from just after the assignment, one a millisecond: the last of 100,000 lies 100 s ahead, within the
  // 5 minutes a reading may be ahead of the server's clock.
  await sleep(5);
  const from = Date.now() + 5;
  await sleep(10);
  const batch = 5000;
  for (let first = 0; first < count; first += batch) {
    const readings = Array.from({ length: Math.min(batch, count - first) }, (_v, k) => {
      const i = first + k;
      const f = i / count;
      return {
        deviceId: device.id,
        recordedAt: new Date(from + i).toISOString(),
        location: { lat: 51.9 - f * 6.44 + Math.sin(i / 300) * 0.02, lng: 4.4 + f * 4.79 + Math.cos(i / 170) * 0.02 },
      };
    });
    const { body } = await api(stack.base, 'POST', `${at}/readings`, { token, body: { readings } });
    if (body.accepted !== readings.length) throw new Error(`readings: ${JSON.stringify(body).slice(0, 300)}`);
  }
  await api(stack.base, 'POST', `${at}/shipments/${shipment.id}/start`, { token });
  return { shipment, device };
}

/** Milliseconds from navigation to the first frame in which the map draws track features, in a fresh profile. */
async function firstPaint(browser, url, global, session) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(error.message));
    if (session) await page.addInitScript((value) => sessionStorage.setItem('tracking-console.session', value), session);
    const started = performance.now();
    await page.goto(url);
    await page.waitForFunction(
      (name) => {
        const map = globalThis[name]?.map;
        return map !== undefined && map.loaded() && map.queryRenderedFeatures(undefined, { layers: ['track'] }).length > 0;
      },
      global,
      { timeout: 120_000, polling: 'raf' },
    );
    const elapsed = performance.now() - started;
    if (errors.length > 0) throw new Error(`${url}: ${errors.join('; ')}`);
    return elapsed;
  } finally {
    await context.close();
  }
}

try {
  await main();
} finally {
  await stack.stop();
}
