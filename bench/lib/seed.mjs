// The benchmark's data, created through the real stack: a tenant, two accounts and an Admin application
// with the admin command line; shipments, devices, sets through the HTTP API.
//  - the read account: BENCH_SHIPMENTS shipments and BENCH_DEVICES devices, never written to after
//    seeding, so every read scenario and the reference see the same rows;
//  - the write account: where create-shipment adds shipments and assign-device moves devices.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { resultsDir } from './config.mjs';
import { api, inPool, issueToken } from './http.mjs';
import { print, writeResults } from './report.mjs';
import { analyzeDatabases, databaseNames, databaseUrl, resetDatabases } from './stack.mjs';

const MODES = ['Road', 'Air', 'Sea', 'Rail', 'Multimodal'];

export function provision(stack) {
  const { tenantId } = stack.admin('tenant', 'create', '--name', 'Benchmark Logistics');
  const { accountId: readAccountId } = stack.admin('account', 'create', '--tenant', tenantId, '--name', 'Bench reads');
  const { accountId: writeAccountId } = stack.admin('account', 'create', '--tenant', tenantId, '--name', 'Bench writes');
  const { applicationId, applicationSecret } = stack.admin(
    'application',
    'create',
    '--tenant',
    tenantId,
    '--name',
    'Benchmark',
    '--role',
    'Admin',
    '--accounts',
    `${readAccountId},${writeAccountId}`,
  );
  return { credentials: { tenantId, applicationId, applicationSecret }, readAccountId, writeAccountId };
}

/** A shipment as a client would send it: a few optional fields, one tag, a small metadata object. */
export function shipmentBody(label, index) {
  return {
    name: `${label} shipment ${index}`,
    reference: `${label}-${index}`,
    mode: MODES[index % MODES.length],
    carrier: 'Benchmark Freight',
    tags: ['bench'],
    metadata: { lane: `L${index % 97}`, priority: index % 3 },
  };
}

export async function seedShipments(base, token, accountId, count, concurrency) {
  return inPool('shipments', count, concurrency, async (index) => {
    const { body } = await api(base, 'POST', `/v1/accounts/${accountId}/shipments`, { token, body: shipmentBody('SEED', index) });
    return body.id;
  });
}

export async function seedDevices(base, token, accountId, count, concurrency, label = 'BENCH') {
  return inPool('devices', count, concurrency, async (index) => {
    const { body } = await api(base, 'POST', `/v1/accounts/${accountId}/devices`, {
      token,
      body: { serialNumber: `${label}-${String(index).padStart(6, '0')}`, model: 'TempTrack T4', firmwareVersion: '4.2.1' },
    });
    return body.id;
  });
}

/**
 * Assignment slots for the assign-device scenario: each slot is one device and one shipment with two
 * sets; every request moves the slot's device to the set it is not on, so each PUT is a real assignment
 * (a row-locked UPDATE in the DMS under the OMS's shipment lock), never the idempotent no-op.
 */
export async function prepareAssignmentSlots(base, token, accountId, count, concurrency) {
  const deviceIds = (await seedDevices(base, token, accountId, count, concurrency, 'SLOT')).results;
  const { results } = await inPool('assignment shipments and sets', count, concurrency, async (index) => {
    const path = `/v1/accounts/${accountId}/shipments`;
    const { body: shipment } = await api(base, 'POST', path, { token, body: { name: `Assignment slot ${index}` } });
    const setIds = [];
    for (const name of ['A', 'B']) {
      const { body: set } = await api(base, 'POST', `${path}/${shipment.id}/sets`, { token, body: { name: `Set ${name}`, kind: 'Pallet' } });
      setIds.push(set.id);
    }
    return { shipmentId: shipment.id, setIds, deviceId: deviceIds[index], on: null };
  });
  return results;
}

/**
 * Pages through the read account with limit=100 and keeps the cursors of every page past the middle:
 * the deep-pages scenario replays them (a cursor is not bound to the limit, so it serves limit=50 too).
 */
export async function collectDeepCursors(base, token, accountId) {
  const cursors = [];
  let cursor = null;
  let position = 0;
  let total;
  const started = performance.now();
  do {
    const query = `limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : '&includeTotal=true'}`;
    const { body } = await api(base, 'GET', `/v1/accounts/${accountId}/shipments?${query}`, { token });
    total ??= body.metadata.total;
    position += body.items.length;
    cursor = body.metadata.nextCursor;
    if (cursor && position >= total / 2) cursors.push({ cursor, position });
  } while (cursor);
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(`  walked ${position} shipments in ${seconds.toFixed(1)} s; ${cursors.length} deep cursors kept\n`);
  return cursors;
}

const stateFile = join(resultsDir, 'state.json');

/**
 * Starts `stack` on the benchmark's data and returns what the scenarios need. With `reuse` (BENCH_REUSE=1),
 * keeps the databases of the previous run when they still hold its data; otherwise recreates them empty,
 * provisions, starts the stack (whose first start migrates them) and seeds. Records the first start-up
 * and the seeding rates in `results`. The databases are analyzed at the end unless `analyze` is false
 * (a reused database was analyzed by the run that seeded it); `data.analyzed` tells which.
 */
export async function startWithData(stack, config, results, { reuse = config.reuse, analyze = true } = {}) {
  const previous = reuse && existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : undefined;
  if (previous && (await stillSeeded(config, previous))) {
    print('Reusing the seeded databases of the previous run (BENCH_REUSE=1).');
    results.seeding = { reused: true, ...previous.seeding };
    await stack.start('seed');
    const token = await issueToken(stack.base, previous.data.credentials);
    const names = databaseNames(config);
    await analyzeDatabases(config, [names.gateway, names.oms, names.dms]);
    const deepCursors = await collectDeepCursors(stack.base, token, previous.data.readAccountId);
    return { ...previous.data, base: stack.base, runId: stack.runId, deepCursors, analyzed: true };
  }
  const names = databaseNames(config);
  print(`Recreating the databases ${names.gateway}, ${names.oms}, ${names.dms}...`);
  await resetDatabases(config, [names.gateway, names.oms, names.dms]);
  const identity = provision(stack);
  print('Starting the stack (first start: migrates the empty databases)...');
  results.coldStartup = await stack.start('seed');
  const token = await issueToken(stack.base, identity.credentials);
  const base = stack.base;

  print('Seeding through the API:');
  const shipments = await seedShipments(base, token, identity.readAccountId, config.shipments, config.seedConcurrency);
  const devices = await seedDevices(base, token, identity.readAccountId, config.devices, config.seedConcurrency);
  const slots = await prepareAssignmentSlots(base, token, identity.writeAccountId, 2 * config.connections, config.seedConcurrency);
  if (analyze) await analyzeDatabases(config, [names.gateway, names.oms, names.dms]);
  const deepCursors = await collectDeepCursors(base, token, identity.readAccountId);
  results.seeding = {
    shipments: { count: config.shipments, seconds: shipments.seconds, perSecond: shipments.perSecond },
    devices: { count: config.devices, seconds: devices.seconds, perSecond: devices.perSecond },
    concurrency: config.seedConcurrency,
  };
  const data = { ...identity, shipmentIds: shipments.results, slots };
  writeResults('state.json', { config: { shipments: config.shipments, devices: config.devices }, seeding: results.seeding, data });
  return { ...data, base, runId: stack.runId, deepCursors, analyzed: analyze };
}

async function stillSeeded(config, previous) {
  const same = ['shipments', 'devices'].every((key) => previous.config[key] === config[key]);
  // Enough assignment slots for this many connections (see prepareAssignmentSlots).
  if (!same || previous.data.slots.length < 2 * config.connections) return false;
  const client = new pg.Client({ connectionString: databaseUrl(config, databaseNames(config).oms) });
  try {
    await client.connect();
    const { rows } = await client.query('SELECT count(*)::int AS n FROM shipments WHERE account_id = $1', [previous.data.readAccountId]);
    return rows[0].n === config.shipments;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A share link for the public-tracking scenario, in the write account (the read account stays as
 * seeded): a started shipment with one pallet, its tracker and `positions` readings recorded while
 * assigned, so the consignee's view carries a track. Returns the link's token.
 */
export async function prepareShareLink(base, token, accountId, positions = 100) {
  const at = `/v1/accounts/${accountId}`;
  const { body: shipment } = await api(base, 'POST', `${at}/shipments`, { token, body: { name: 'Shared shipment' } });
  const { body: set } = await api(base, 'POST', `${at}/shipments/${shipment.id}/sets`, { token, body: { name: 'Pallet 1', kind: 'Pallet' } });
  const { body: device } = await api(base, 'POST', `${at}/devices`, { token, body: { serialNumber: `SHARED-${Date.now()}`, model: 'Bench' } });
  await api(base, 'PUT', `${at}/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`, { token });
  await api(base, 'POST', `${at}/shipments/${shipment.id}/start`, { token });
  // A track holds only what was recorded after the assignment: stamp the readings after it, in the past.
  const from = Date.now() + 1;
  while (Date.now() < from + positions) await new Promise((resolve) => setTimeout(resolve, positions));
  const readings = Array.from({ length: positions }, (_v, i) => ({
    deviceId: device.id,
    recordedAt: new Date(from + i).toISOString(),
    location: { lat: 51.9 - i * 0.0004, lng: 4.4 + Math.sin(i / 20) * 0.01 },
  }));
  await api(base, 'POST', `${at}/readings`, { token, body: { readings } });
  const { body: link } = await api(base, 'POST', `${at}/shipments/${shipment.id}/share-links`, { token, body: {} });
  return new URL(link.url).pathname.split('/').pop();
}
