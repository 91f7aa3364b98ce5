#!/usr/bin/env node
// `npm start`: runs the whole stack on this machine (after `npm run build`). It migrates the
// databases, seeds a demo tenant when the identity database is empty, starts OMS, DMS, the gateway
// and the device gateway, waits until the gateways are ready, prints credentials, a curl line for the
// API and one for the demo tracker, and stops every service cleanly on Ctrl-C.
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { randomBytes } from 'node:crypto';
import { localSettings, latenessNotice, mallocSettings, NODE_ARGS } from './start-settings.mjs';
import { webhookNotice, webhookSettings } from './start-webhooks.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const port = Number(process.env.PORT ?? 3000);
const base = `http://localhost:${port}`;
// What this machine keeps between starts (git-ignored); START_LOCAL_DIR moves it, for the test of npm start.
const localDir = process.env.START_LOCAL_DIR ?? join(root, '.local');
const credentialsFile = join(localDir, 'demo-credentials.json');
const keyEncryptionKeyFile = join(localDir, 'key-encryption-key');
const services = {
  oms: 'apps/oms/dist/main.js',
  dms: 'apps/dms/dist/main.js',
  worker: 'apps/oms/dist/worker.js',
  gateway: 'apps/gateway/dist/main.js',
  'device-gateway': 'apps/device-gateway/dist/main.js',
};
const colors = { oms: 36, dms: 35, worker: 34, gateway: 33, 'device-gateway': 31, start: 32 };
// The device gateway's listeners. Mosquitto holds 1883 on machines of this kind, so MQTT takes 1884 here.
const deviceHttpPort = Number(process.env.DEVICE_HTTP_PORT ?? 5055);
const deviceMqttPort = Number(process.env.DEVICE_MQTT_PORT ?? 1884);
const deviceTeltonikaPort = Number(process.env.DEVICE_TELTONIKA_PORT ?? 5027);
const deviceBase = `http://127.0.0.1:${deviceHttpPort}`;
const children = new Map();
let stopping = false;

function say(message, name = 'start') {
  process.stdout.write(`\x1b[${colors[name]}m[${name}]\x1b[0m ${message}\n`);
}

function admin(...args) {
  const out = execFileSync(process.execPath, [join(root, 'apps/gateway/dist/cli/admin.js'), ...args], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out.toString());
}

function run(name) {
  // Read when the service starts, so that it sees what this script set up first (KEY_ENCRYPTION_KEYS).
  // This machine only, unless HOST or OPS_HOST says otherwise: the demo's credentials are printed in the clear.
  const env = {
    ...process.env,
    HOST: process.env.HOST ?? '127.0.0.1',
    OPS_HOST: process.env.OPS_HOST ?? '127.0.0.1',
    // Local development: webhooks may reach http:// receivers on this machine (both are off in production).
    ...webhookSettings(process.env),
    // Readable log lines, and visits and alerts within seconds of a pause (both production defaults differ).
    ...localSettings(process.env, process.stdout.isTTY === true),
    // The OMS's and the DMS's glibc heap kept rather than trimmed at every large free (scripts/start-settings.mjs).
    ...mallocSettings(name, process.env),
    DEVICE_HTTP_PORT: String(deviceHttpPort),
    DEVICE_MQTT_PORT: String(deviceMqttPort),
    DEVICE_TELTONIKA_PORT: String(deviceTeltonikaPort),
  };
  // No --enable-source-maps: each entry file maps its own stack traces (libs/core/src/source-maps.ts).
  const child = spawn(process.execPath, [...(NODE_ARGS[name] ?? []), join(root, services[name])], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => say(line, name));
  }
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (!stopping) {
      say(`${name} exited unexpectedly (${signal ?? `code ${code}`}); stopping the others.`);
      void stop(1);
    }
  });
  children.set(name, child);
}

async function stop(exitCode) {
  if (stopping) return;
  stopping = true;
  say('stopping services...');
  const exits = [...children.values()].map((child) => new Promise((resolve) => child.once('exit', resolve)));
  for (const child of children.values()) child.kill('SIGTERM');
  const timer = setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
  }, 10000);
  await Promise.all(exits);
  clearTimeout(timer);
  say('stopped.');
  process.exit(exitCode);
}

async function waitUntilReady(timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${base}/health/ready`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the gateway was not ready within ${timeoutMs / 1000} s`);
}

/** Until the device gateway's HTTP listener answers (any answer: it has no health route of its own there). */
async function waitForDeviceGateway(timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      await fetch(`${deviceBase}/`);
      return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the device gateway did not listen on ${deviceBase} within ${timeoutMs / 1000} s`);
}

async function api(method, path, token, body) {
  const response = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`);
  return response.status === 204 ? null : response.json();
}

/**
 * The first demo shipment under way with a tracker and a first stretch of road from Rotterdam towards
 * Lyon, so that `GET /shipments/{id}/track` shows something at once. A track holds only what a device
 * recorded while assigned, so the readings are stamped after the assignment: 30 positions over the
 * 600 ms this script waits (a demo, not a truck's real speed).
 */
async function seedDemoTrack(accountId, token, shipmentId) {
  const at = `/v1/accounts/${accountId}`;
  const set = await api('POST', `${at}/shipments/${shipmentId}/sets`, token, { name: 'Pallets', kind: 'Pallet' });
  const device = await api('POST', `${at}/devices`, token, { serialNumber: 'DEMO-TRACKER-1', model: 'Demo GPS tracker' });
  await api('PUT', `${at}/shipments/${shipmentId}/sets/${set.id}/devices/${device.id}`, token);
  const assigned = Date.now();
  await api('POST', `${at}/shipments/${shipmentId}/start`, token);
  await new Promise((resolve) => setTimeout(resolve, 600));
  const [from, to] = [
    [51.9244, 4.4777],
    [45.764, 4.8357],
  ];
  const readings = Array.from({ length: 30 }, (_, i) => {
    const f = i / 29 / 4; // the first quarter of the way
    return {
      deviceId: device.id,
      recordedAt: new Date(assigned + 10 + i * 19).toISOString(),
      location: { lat: from[0] + (to[0] - from[0]) * f, lng: from[1] + (to[1] - from[1]) * f + 0.02 * Math.sin(i / 3), accuracyMeters: 8 },
      temperatureC: 4 + Math.sin(i / 5),
      batteryPercent: 90 - i * 0.2,
    };
  });
  await api('POST', `${at}/readings`, token, { readings });
  return device;
}

/** The demo Teltonika tracker's IMEI (15 digits; the credential names the demo tracker). */
const demoTeltonikaImei = '356307042441013';

/** The demo tracker's own credentials for the device gateway: HTTP (OsmAnd, Traccar Client, our JSON), MQTT, Teltonika. */
async function seedDemoTrackerCredential(accountId, token, deviceId) {
  const at = `/v1/accounts/${accountId}/devices/${deviceId}/credentials`;
  const http = await api('POST', at, token, { protocol: 'Http', identifier: 'demo-tracker-1' });
  const mqtt = await api('POST', at, token, { protocol: 'Mqtt', identifier: 'demo-tracker-1' });
  const teltonika = await api('POST', at, token, { protocol: 'Teltonika', identifier: demoTeltonikaImei });
  return {
    deviceIdentifier: http.identifier,
    deviceSecret: http.secret,
    mqttIdentifier: mqtt.identifier,
    mqttSecret: mqtt.secret,
    teltonikaImei: teltonika.identifier,
  };
}

/** The lines that show how a tracker reaches the device gateway as the demo tracker. */
function deviceGatewayNotice(credentials) {
  say(`Device gateway: HTTP (OsmAnd, Traccar Client, JSON) on ${deviceBase}, MQTT port ${deviceMqttPort}, Teltonika port ${deviceTeltonikaPort}`);
  if (!credentials?.deviceSecret) return;
  say('Send a position as the demo tracker (OsmAnd protocol):');
  const query = `id=${credentials.deviceIdentifier}&lat=51.9225&lon=4.4792&speed=12&batt=87&timestamp=$(date +%s)`;
  process.stdout.write(`\ncurl -s "${deviceBase}/t/${credentials.deviceSecret}/?${query}"\n\n`);
  if (credentials.mqttSecret) {
    say('Or publish one over MQTT (QoS 1, acknowledged once stored):');
    const reading = `'{"recordedAt":"'$(date -u +%FT%TZ)'","location":{"lat":51.9231,"lng":4.4801,"speedMps":11}}'`;
    const topic = `devices/${credentials.mqttIdentifier}/readings`;
    process.stdout.write(`mosquitto_pub -h 127.0.0.1 -p ${deviceMqttPort} -u ${credentials.mqttIdentifier} -P ${credentials.mqttSecret} -t ${topic} -q 1 -m ${reading}\n\n`);
  }
  if (credentials.teltonikaImei) say(`Teltonika trackers (Codec 8 / 8 Extended over TCP) connect to this machine's port ${deviceTeltonikaPort}; the demo tracker's IMEI is ${credentials.teltonikaImei}.`);
}

// Signing keys are stored encrypted with a key-encryption key: unless one is given, use this machine's own,
// made on the first start and kept in .local/ (git-ignored), so later starts can open the stored keys.
if (!process.env.KEY_ENCRYPTION_KEYS) {
  if (!existsSync(keyEncryptionKeyFile)) {
    mkdirSync(dirname(keyEncryptionKeyFile), { recursive: true });
    writeFileSync(keyEncryptionKeyFile, `local-${Date.now()}:${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    say(`made a key-encryption key for the signing keys in ${keyEncryptionKeyFile}`);
  }
  process.env.KEY_ENCRYPTION_KEYS = readFileSync(keyEncryptionKeyFile, 'utf8').trim();
}

process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

// The admin command migrates the identity database before it seeds, so it runs first.
const seed = admin('demo', 'seed');
let credentials;
if (seed.seeded) {
  const { seeded: _seeded, ...fresh } = seed;
  credentials = fresh;
  mkdirSync(dirname(credentialsFile), { recursive: true });
  writeFileSync(credentialsFile, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
} else if (existsSync(credentialsFile)) {
  credentials = JSON.parse(readFileSync(credentialsFile, 'utf8'));
}

run('oms');
run('dms');
run('worker');
run('gateway');
run('device-gateway');
try {
  await waitUntilReady(60000);
  await waitForDeviceGateway(60000);
} catch (error) {
  say(error.message);
  await stop(1);
}

let tokenResponse;
if (credentials) {
  const { tenantId, applicationId, applicationSecret } = credentials;
  tokenResponse = await fetch(`${base}/v1/applications/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tenantId, applicationId, applicationSecret }),
  });
  if (!tokenResponse.ok) {
    const answer = `${tokenResponse.status} ${await tokenResponse.text()}`;
    if (seed.seeded) {
      say(`The demo application just seeded could not get a token: ${answer}`);
      await stop(1);
    }
    // Kept from a start on other databases (GATEWAY_DATABASE_URL pointed elsewhere, or the databases were
    // recreated): the stack serves as it is, without demo lines that would not work.
    say(`The demo credentials kept in ${credentialsFile} do not sign in here (${answer}).`);
    credentials = undefined;
  }
}

if (credentials) {
  const { tenantId, applicationId, applicationSecret, accountId } = credentials;
  if (seed.seeded) {
    const { accessToken } = await tokenResponse.json();
    const shipments = [];
    for (const name of ['Rotterdam to Lyon', 'Hamburg to Milan', 'Antwerp to Madrid']) {
      shipments.push(await api('POST', `/v1/accounts/${accountId}/shipments`, accessToken, { name }));
    }
    const tracker = await seedDemoTrack(accountId, accessToken, shipments[0].id);
    Object.assign(credentials, await seedDemoTrackerCredential(accountId, accessToken, tracker.id));
    writeFileSync(credentialsFile, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  }
  const body = JSON.stringify({ tenantId, applicationId, applicationSecret });
  const curl =
    `curl -s ${base}/v1/accounts/${accountId}/shipments -H "Authorization: Bearer $(curl -s -X POST ${base}/v1/applications/token ` +
    `-H 'Content-Type: application/json' -d '${body}' | node -pe 'JSON.parse(require(\"fs\").readFileSync(0)).accessToken')"`;
  say(`The stack is ready on ${base}.`);
  // Labelled as the console's sign-in form labels its fields.
  say(`Open ${base}/console and sign in with (demo account ${accountId}, role Admin):`);
  say(`  Tenant ID           ${tenantId}`);
  say(`  Application ID      ${applicationId}`);
  say(`  Application secret  ${applicationSecret}`);
  say(`(credentials kept in ${credentialsFile})`);
  say(webhookNotice(process.env));
  say(latenessNotice(process.env));
  say('List the demo shipments:');
  process.stdout.write(`\n${curl}\n\n`);
  deviceGatewayNotice(credentials);
} else {
  say(`The stack is ready on ${base}. The identity database already had tenants and ${credentialsFile} holds none of`);
  say('their credentials, so none can be shown: create an application with `npm run -s admin -- application create ...`.');
}
say('Press Ctrl-C to stop.');
