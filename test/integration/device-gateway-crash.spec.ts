import { randomInt } from 'node:crypto';
import type { Socket } from 'node:net';
import { connectAsync, type MqttClient } from 'mqtt';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type AvlRecord, CODEC_8, encodeAvlPacket } from '../../apps/device-gateway/src/teltonika/teltonika-codec.js';
import { createDevice, devicesPath } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { startTestDeviceGateway, type TestDeviceGateway } from '../support/device-gateway.js';
import { type HeldLock, holdRow, lockWaiters, waitUntil } from '../support/ops-endpoints.js';
import { killServices, spawnService } from '../support/processes.js';
import { TestStack } from '../support/stack.js';
import { Tracker } from '../support/teltonika-tracker.js';

/**
 * The DMS killed with SIGKILL in the middle of a batch of device readings (the contract: "A process
 * killed at any moment loses no acknowledged reading"; the issue: "the DMS killed mid-batch: no
 * acknowledgement, the device resends, nothing half-stored").
 *
 * One DMS call carries an MQTT device's message (3 readings) and a Teltonika device's packet (10 records)
 * of two tenants. The DMS stores a batch in one transaction: every device of the batch locked first, then
 * one account after the other in key order. The test holds, uncommitted, a reading of the device whose
 * account comes second at the time of its first record, so the DMS has inserted the first account's
 * readings (uncommitted) and waits, inserting the second account's, for the test's transaction when it
 * is killed. The test waits for that wait in pg_stat_activity, never for time. The DMS runs as its own process (from the build); the device
 * gateway in this process, with a short DMS timeout.
 */

const MQTT_READINGS = 3;
const TELTONIKA_RECORDS = 10;

let stack: TestStack | undefined;
let devices: TestDeviceGateway | undefined;
let held: HeldLock | undefined;
const clients: MqttClient[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  await held?.release();
  for (const client of clients.splice(0)) await client.endAsync(true).catch(() => undefined);
  for (const socket of sockets.splice(0)) socket.destroy();
  await devices?.stop();
  await killServices();
  await stack?.stop();
  held = devices = stack = undefined;
});

describe('device gateway: the DMS killed in the middle of a batch', { timeout: 120000 }, () => {
  it('sends no acknowledgement, stores nothing of the batch, and stores the resends once each', async () => {
    stack = await TestStack.start({ dmsReplicas: 0 });
    const dms = await spawnService(stack, 'dms');
    const [first, second] = await Promise.all([createTenant(stack), createTenant(stack)]);
    // Both messages in one DMS call: it goes as soon as it holds all 13 readings (the wait is longer than the test).
    devices = await startTestDeviceGateway(stack, {
      DEVICE_BATCH_MAX_READINGS: String(MQTT_READINGS + TELTONIKA_RECORDS),
      DEVICE_BATCH_MAX_WAIT_MS: '10000',
      DEVICE_RPC_TIMEOUT_MS: '3000',
    });
    const mqttPort = Number(new URL(devices.address('mqtt')).port);
    const teltonikaPort = Number(new URL(devices.address('teltonika')).port);

    // The DMS stores accounts in the order of `accountId|tenantId`: the MQTT device in the first one.
    const key = (tenant: TestTenant) => `${tenant.accountIds[0]}|${tenant.tenantId}`;
    const [early, late] = key(first!) < key(second!) ? [first!, second!] : [second!, first!];
    const mqttDevice = await credential(stack, early, 'Mqtt');
    const teltonikaDevice = await credential(stack, late, 'Teltonika', newImei());

    const now = Math.floor(Date.now() / 1000) * 1000;
    held = await holdRow(
      stack.env.DMS_DATABASE_URL!,
      'INSERT INTO readings (id, tenant_id, account_id, device_id, recorded_at, received_at) VALUES (gen_random_uuid(), $1, $2, $3, $4, now())',
      [late.tenantId, late.accountIds[0], teltonikaDevice.deviceId, new Date(now - 60 * 1000).toISOString()],
    );

    const message = JSON.stringify({
      readings: Array.from({ length: MQTT_READINGS }, (_, i) => ({ recordedAt: new Date(now - (30 - i) * 1000).toISOString(), temperatureC: 4 + i })),
    });
    const packet = encodeAvlPacket(
      CODEC_8,
      Array.from({ length: TELTONIKA_RECORDS }, (_, i) => record(now - (60 - i) * 1000, 253032016 + i * 1000)),
    );

    // Both connected first, then the two messages back to back.
    const tracker = await Tracker.open(teltonikaPort, sockets);
    expect(await tracker.login(teltonikaDevice.identifier)).toEqual(Buffer.from([0x01]));
    const mqtt = await mqttClient(mqttPort, mqttDevice.identifier, mqttDevice.secret);
    let pubacks = 0;
    const closed = new Promise<void>((resolve) => mqtt.once('close', () => resolve()));
    void mqtt.publishAsync(`devices/${mqttDevice.identifier}/readings`, message, { qos: 1 }).then(
      () => (pubacks += 1),
      () => undefined,
    );
    tracker.send(packet);

    await waitUntil(async () => (await lockWaiters(stack!.env.DMS_DATABASE_URL!, 'dms')) > 0, 'the DMS blocked on the held reading');
    // Its transaction has inserted readings already (it holds the insert's lock on the readings table):
    // the first account's readings, uncommitted, when the process dies.
    expect(await blockedInserters(stack.env.DMS_DATABASE_URL!)).toBe(1);
    await dms.kill9();
    await held.release();

    // The DMS's answer never comes: the MQTT device is disconnected without a PUBACK (so that it resends),
    // the Teltonika device gets no record count and keeps its connection.
    await closed;
    expect(pubacks).toBe(0);
    await waitUntil(async () => (await unavailable(devices!, 'Teltonika')) >= 1, 'the Teltonika packet answered unavailable');
    expect(tracker.pending).toBe(0);

    // Nothing half-stored: not the MQTT device's readings the transaction had inserted, not a last-known field.
    expect(await storedRows(stack, [mqttDevice.deviceId, teltonikaDevice.deviceId])).toEqual({ readings: 0, lastSeen: 0 });

    // The DMS is back; both devices resend what was never acknowledged.
    await spawnService(stack, 'dms');
    tracker.send(packet);
    const again = await mqttClient(mqttPort, mqttDevice.identifier, mqttDevice.secret);
    await again.publishAsync(`devices/${mqttDevice.identifier}/readings`, message, { qos: 1 });
    expect(await tracker.next(4)).toEqual(count(TELTONIKA_RECORDS));

    // Stored once each; a second resend (the acknowledgement lost again) adds nothing.
    tracker.send(packet);
    expect(await tracker.next(4)).toEqual(count(TELTONIKA_RECORDS));
    await again.publishAsync(`devices/${mqttDevice.identifier}/readings`, message, { qos: 1 });
    expect(await storedOf(stack, early, mqttDevice.deviceId)).toHaveLength(MQTT_READINGS);
    expect(await storedOf(stack, late, teltonikaDevice.deviceId)).toHaveLength(TELTONIKA_RECORDS);
    expect(await storedRows(stack, [mqttDevice.deviceId, teltonikaDevice.deviceId])).toEqual({ readings: MQTT_READINGS + TELTONIKA_RECORDS, lastSeen: 2 });
  });
});

const newImei = () => `35${String(randomInt(0, 10 ** 6)).padStart(6, '0')}${String(randomInt(0, 10 ** 7)).padStart(7, '0')}`;

const record = (timestamp: number, longitude: number): AvlRecord => ({
  timestamp,
  priority: 0,
  longitude,
  latitude: 547146368,
  altitude: 111,
  angle: 90,
  satellites: 9,
  speed: 72,
  eventIoId: 0,
  io: [{ id: 113, size: 1, value: 80 }],
});

async function credential(stack: TestStack, tenant: TestTenant, protocol: 'Mqtt' | 'Teltonika', identifier?: string) {
  const device = (await createDevice(stack, tenant)).device;
  const created = await stack.request('POST', `${devicesPath(tenant)}/${device.id}/credentials`, { token: tenant.token, body: identifier ? { protocol, identifier } : { protocol } });
  expect(created.status, created.text).toBe(201);
  return { deviceId: device.id as string, identifier: created.body.identifier as string, secret: created.body.secret as string };
}

async function mqttClient(port: number, username: string, password: string): Promise<MqttClient> {
  const client = await connectAsync(`mqtt://127.0.0.1:${port}`, { protocolVersion: 5, username, password, reconnectPeriod: 0, connectTimeout: 10_000 });
  clients.push(client);
  return client;
}

async function unavailable(devices: TestDeviceGateway, protocol: string): Promise<number> {
  const metric = (await devices.metrics.registry.getMetricsAsJSON()).find((m) => m.name === 'device_messages_total');
  return metric?.values.find((v) => v.labels.protocol === protocol && v.labels.outcome === 'unavailable')?.value ?? 0;
}

async function storedOf(stack: TestStack, tenant: TestTenant, deviceId: string): Promise<unknown[]> {
  const answer = await stack.request('GET', `${devicesPath(tenant)}/${deviceId}/readings`, { token: tenant.token });
  expect(answer.status, answer.text).toBe(200);
  return answer.body.readings as unknown[];
}

/** Straight from the DMS's database (no DMS needed): the devices' readings, and how many have a last-seen time. */
async function storedRows(stack: TestStack, deviceIds: string[]): Promise<{ readings: number; lastSeen: number }> {
  const client = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
  await client.connect();
  try {
    const readings = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM readings WHERE device_id = ANY($1::uuid[])', [deviceIds]);
    const lastSeen = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM devices WHERE id = ANY($1::uuid[]) AND last_seen_at IS NOT NULL', [deviceIds]);
    return { readings: readings.rows[0]!.n, lastSeen: lastSeen.rows[0]!.n };
  } finally {
    await client.end();
  }
}

/** Sessions of the DMS that wait for a lock inside a transaction that has inserted into `readings`. */
async function blockedInserters(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(DISTINCT a.pid)::int AS n FROM pg_stat_activity a
         JOIN pg_locks l ON l.pid = a.pid AND l.granted AND l.mode = 'RowExclusiveLock'
        WHERE a.datname = current_database() AND a.application_name = 'dms' AND a.wait_event_type = 'Lock'
          AND l.relation = 'readings'::regclass`,
    );
    return rows[0]!.n;
  } finally {
    await client.end();
  }
}

function count(n: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(n);
  return out;
}
