import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { connectAsync, type MqttClient } from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type AvlRecord, CODEC_8, encodeAvlPacket, encodeHandshake } from '../../apps/device-gateway/src/teltonika/teltonika-codec.js';
import { createDevice, devicesPath } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { startTestDeviceGateway, type TestDeviceGateway } from '../support/device-gateway.js';
import { waitUntil } from '../support/ops-endpoints.js';
import { TestStack } from '../support/stack.js';
import { Tracker } from '../support/teltonika-tracker.js';
import { makeTlsFiles, type TlsFiles } from '../support/tls-files.js';

/**
 * MQTT and Teltonika through the whole stack: the device gateway with every registered listener, the
 * real DMS over NATS, PostgreSQL and Redis. Real clients: mqtt.js, Mosquitto's own `mosquitto_pub`, and
 * raw TCP for Teltonika. What a device sends is read back through `GET /devices/{id}/readings`.
 */
describe('device gateway: MQTT and Teltonika end to end', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let devices: TestDeviceGateway;
  let mqttPort: number;
  let teltonikaPort: number;
  const clients: MqttClient[] = [];
  const sockets: Socket[] = [];

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack);
    // A short re-check, so that a deleted credential's connection closes well within the test.
    devices = await startTestDeviceGateway(stack, { DEVICE_REVOCATION_CHECK_MS: '300' });
    mqttPort = Number(new URL(devices.address('mqtt')).port);
    teltonikaPort = Number(new URL(devices.address('teltonika')).port);
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.endAsync(true).catch(() => undefined);
    for (const socket of sockets.splice(0)) socket.destroy();
  });
  afterAll(async () => {
    await devices?.stop();
    await stack?.stop();
  });

  const ago = (seconds: number) => new Date(Math.floor(Date.now() / 1000) * 1000 - seconds * 1000).toISOString();
  type Stored = { recordedAt: string; location: { lat: number; lng: number; speedMps: number | null } | null; batteryPercent: number | null; temperatureC: number | null };
  const stored = async (deviceId: string) =>
    (await stack.request('GET', `${devicesPath(tenant)}/${deviceId}/readings`, { token: tenant.token })).body.readings as Stored[];

  async function credential(protocol: 'Mqtt' | 'Teltonika', identifier?: string): Promise<{ deviceId: string; id: string; identifier: string; secret: string }> {
    const device = (await createDevice(stack, tenant)).device;
    const created = await stack.request('POST', `${devicesPath(tenant)}/${device.id}/credentials`, {
      token: tenant.token,
      body: identifier ? { protocol, identifier } : { protocol },
    });
    expect(created.status, created.text).toBe(201);
    return { deviceId: device.id, id: created.body.id, identifier: created.body.identifier, secret: created.body.secret };
  }

  async function mqttClient(username: string, password: string, version: 4 | 5 = 5): Promise<MqttClient> {
    const client = await connectAsync(`mqtt://127.0.0.1:${mqttPort}`, { protocolVersion: version, username, password, reconnectPeriod: 0, connectTimeout: 10_000 });
    clients.push(client);
    return client;
  }

  /** How many acknowledgements `device_ack_latency_seconds` observed for `protocol`. */
  async function ackCount(protocol: string): Promise<number> {
    const metric = (await devices.metrics.registry.getMetricsAsJSON()).find((m) => m.name === 'device_ack_latency_seconds');
    const values = (metric?.values ?? []) as { labels: Record<string, unknown>; value: number; metricName?: string }[];
    return values.find((v) => v.metricName === 'device_ack_latency_seconds_count' && v.labels.protocol === protocol)?.value ?? 0;
  }

  async function counted(name: string, labels: Record<string, string>): Promise<number> {
    const metric = (await devices.metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
    const value = metric?.values.find((v) => Object.entries(labels).every(([key, label]) => v.labels[key] === label));
    return value?.value ?? 0;
  }

  describe('MQTT', () => {
    it('stores a reading published at QoS 1 by mqtt.js, and acknowledges it once stored', async () => {
      const device = await credential('Mqtt');
      const client = await mqttClient(device.identifier, device.secret);
      const reading = { recordedAt: ago(5), location: { lat: 52.52, lng: 13.405, speedMps: 12.5 } };
      const counts = () =>
        Promise.all([
          counted('device_messages_total', { protocol: 'Mqtt', outcome: 'committed' }),
          counted('device_readings_total', { protocol: 'Mqtt', outcome: 'accepted' }),
          ackCount('Mqtt'),
        ]);
      const before = await counts();
      // mqtt.js resolves on PUBACK 0 only (another reason code rejects).
      await client.publishAsync(`devices/${device.identifier}/readings`, JSON.stringify(reading), { qos: 1 });
      // The PUBACK came after the commit: the reading is there at once.
      expect(await stored(device.deviceId)).toEqual([expect.objectContaining({ recordedAt: reading.recordedAt, location: expect.objectContaining(reading.location) })]);
      // Counted once each (the listener counts MQTT messages, the sink does not count them again).
      expect((await counts()).map((value, i) => value - before[i]!)).toEqual([1, 1, 1]);
    });

    it('stores a reading published at QoS 1 by mosquitto_pub, which exits 0 only once acknowledged', async () => {
      const device = await credential('Mqtt');
      const reading = { recordedAt: ago(4), location: { lat: 48.8566, lng: 2.3522 }, batteryPercent: 64 };
      const args = ['-h', '127.0.0.1', '-p', String(mqttPort), '-u', device.identifier, '-P', device.secret, '-t', `devices/${device.identifier}/readings`, '-q', '1', '-m', JSON.stringify(reading)];
      const { code, output } = await run('mosquitto_pub', args);
      expect(code, output).toBe(0);
      expect(await stored(device.deviceId)).toEqual([expect.objectContaining({ recordedAt: reading.recordedAt, location: expect.objectContaining(reading.location), batteryPercent: 64 })]);
    });

    it.each([4, 5] as const)('refuses a wrong password and counts it as every protocol counts failed authentications (MQTT %i)', async (version) => {
      const device = await credential('Mqtt');
      const before = await counted('device_authentication_failures_total', { protocol: 'Mqtt', reason: 'credentials' });
      const error = (await mqttClient(device.identifier, 'dvs_not-the-secret', version).then(
        () => ({ code: -1 }),
        (refused: { code?: number }) => refused,
      )) as { code?: number };
      expect(error.code).toBe(version === 5 ? 0x86 : 4);
      expect(await counted('device_authentication_failures_total', { protocol: 'Mqtt', reason: 'credentials' })).toBe(before + 1);
      // And mosquitto_pub, a client nobody here wrote, is refused too.
      const { code } = await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(mqttPort), '-u', device.identifier, '-P', 'dvs_wrong', '-t', `devices/${device.identifier}/readings`, '-q', '1', '-m', '{}']);
      expect(code).not.toBe(0);
      expect(await stored(device.deviceId)).toEqual([]);
    });

    it("drops what is published on another device's topic (PUBACK 0x87), storing nothing for it, and goes on", async () => {
      const mine = await credential('Mqtt');
      const theirs = await credential('Mqtt');
      const client = await mqttClient(mine.identifier, mine.secret);
      await expect(client.publishAsync(`devices/${theirs.identifier}/readings`, JSON.stringify({ recordedAt: ago(3), temperatureC: 4 }), { qos: 1 })).rejects.toMatchObject({ code: 0x87 });
      // The connection goes on: its own topic still works.
      await client.publishAsync(`devices/${mine.identifier}/readings`, JSON.stringify({ recordedAt: ago(2), temperatureC: 4 }), { qos: 1 });
      expect(await stored(theirs.deviceId)).toEqual([]);
      expect(await stored(mine.deviceId)).toHaveLength(1);
    });

    it('tells the device on devices/{identifier}/rejected which readings of a half-rejected message were refused, and stores the rest', async () => {
      const device = await credential('Mqtt');
      const client = await mqttClient(device.identifier, device.secret);
      await client.subscribeAsync(`devices/${device.identifier}/rejected`, { qos: 0 });
      const rejection = new Promise<{ rejected: { index: number; error: { code: string; details?: { field: string } } }[] }>((resolve) =>
        client.once('message', (_topic, payload) => resolve(JSON.parse(payload.toString()))),
      );
      const good = { recordedAt: ago(10), temperatureC: 5.5 };
      const bad = { recordedAt: ago(9), temperatureC: 1000 };
      await client.publishAsync(`devices/${device.identifier}/readings`, JSON.stringify({ readings: [good, bad] }), { qos: 1 });
      const { rejected } = await rejection;
      expect(rejected).toEqual([{ index: 1, error: expect.objectContaining({ code: 'InvalidParameter', details: expect.objectContaining({ field: 'readings.1.temperatureC' }) }) }]);
      expect(await stored(device.deviceId)).toEqual([expect.objectContaining({ recordedAt: good.recordedAt, temperatureC: 5.5 })]);
    });

    it('closes an open connection once its credential is deleted (DEVICE_REVOCATION_CHECK_MS 300 here; at most 60 s)', async () => {
      const device = await credential('Mqtt');
      const client = await mqttClient(device.identifier, device.secret);
      const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
      const deleted = await stack.request('DELETE', `${devicesPath(tenant)}/${device.deviceId}/credentials/${device.id}`, { token: tenant.token });
      expect(deleted.status).toBe(204);
      const started = Date.now();
      await closed;
      expect(Date.now() - started).toBeLessThan(60_000);
      await expect(mqttClient(device.identifier, device.secret)).rejects.toMatchObject({ code: 0x86 });
    });
  });

  describe('Teltonika', () => {
    const newImei = () => `35${String(randomInt(0, 10 ** 6)).padStart(6, '0')}${String(randomInt(0, 10 ** 7)).padStart(7, '0')}`;
    const record = (secondsAgo: number, overrides: Partial<AvlRecord> = {}): AvlRecord => ({
      timestamp: Math.floor(Date.now() / 1000) * 1000 - secondsAgo * 1000,
      priority: 0,
      longitude: 253032016,
      latitude: 547146368,
      altitude: 111,
      angle: 90,
      satellites: 9,
      speed: 72,
      eventIoId: 0,
      io: [{ id: 113, size: 1, value: 80 }],
      ...overrides,
    });

    it('answers 0x01 to a credential\'s IMEI and 0x00 to an unknown IMEI and to a retired device\'s IMEI', async () => {
      const device = await credential('Teltonika', newImei());
      expect(await (await Tracker.open(teltonikaPort, sockets)).login(device.identifier)).toEqual(Buffer.from([0x01]));

      const unknown = await Tracker.open(teltonikaPort, sockets);
      expect(await unknown.login(newImei())).toEqual(Buffer.from([0x00]));
      await unknown.closed;

      const retired = await credential('Teltonika', newImei());
      expect((await stack.request('POST', `${devicesPath(tenant)}/${retired.deviceId}/retire`, { token: tenant.token })).status).toBe(204);
      const refused = await Tracker.open(teltonikaPort, sockets);
      expect(await refused.login(retired.identifier)).toEqual(Buffer.from([0x00]));
      await refused.closed;
      expect(await counted('device_authentication_failures_total', { protocol: 'Teltonika', reason: 'credentials' })).toBeGreaterThanOrEqual(2);
    });

    it('acknowledges a Codec 8 packet with its record count once stored, as the contract maps it; a resend stores nothing new', async () => {
      const device = await credential('Teltonika', newImei());
      const tracker = await Tracker.open(teltonikaPort, sockets);
      expect(await tracker.login(device.identifier)).toEqual(Buffer.from([0x01]));
      const records = [record(20), record(10, { longitude: 253040000, speed: 36, angle: 180 })];
      const packet = encodeAvlPacket(CODEC_8, records);
      const counts = () =>
        Promise.all([
          counted('device_messages_total', { protocol: 'Teltonika', outcome: 'committed' }),
          counted('device_readings_total', { protocol: 'Teltonika', outcome: 'accepted' }),
          ackCount('Teltonika'),
        ]);
      const before = await counts();
      tracker.send(packet);
      expect(await tracker.next(4)).toEqual(count(2));
      // One packet, two records, one acknowledgement: each counted once.
      expect((await counts()).map((value, i) => value - before[i]!)).toEqual([1, 2, 1]);
      const first = await stored(device.deviceId);
      expect(first).toHaveLength(2);
      expect(first).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            recordedAt: new Date(records[0]!.timestamp).toISOString(),
            location: expect.objectContaining({ lat: 54.7146368, lng: 25.3032016, speedMps: 20, headingDegrees: 90, altitudeMeters: 111 }),
            batteryPercent: 80,
          }),
          expect.objectContaining({
            recordedAt: new Date(records[1]!.timestamp).toISOString(),
            location: expect.objectContaining({ lat: 54.7146368, lng: 25.304, speedMps: 10, headingDegrees: 180 }),
            batteryPercent: 80,
          }),
        ]),
      );
      // The device did not see the acknowledgement and sends the same packet again: acknowledged, duplicates.
      tracker.send(packet);
      expect(await tracker.next(4)).toEqual(count(2));
      expect(await stored(device.deviceId)).toHaveLength(2);
      await waitUntil(async () => (await counted('device_readings_total', { protocol: 'Teltonika', outcome: 'duplicate' })) >= 2, 'the duplicates counted');
    });

    it('does not acknowledge a packet while the DMS is down; the resend once it is back is stored once, whole', async () => {
      const device = await credential('Teltonika', newImei());
      const tracker = await Tracker.open(teltonikaPort, sockets);
      expect(await tracker.login(device.identifier)).toEqual(Buffer.from([0x01]));
      const packet = encodeAvlPacket(CODEC_8, [record(30), record(25, { longitude: 253050000 }), record(22, { longitude: 253060000 })]);
      const unavailable = () => counted('device_messages_total', { protocol: 'Teltonika', outcome: 'unavailable' });
      const before = await unavailable();
      await stack.stopDmsReplicas();
      try {
        tracker.send(packet);
        await waitUntil(async () => (await unavailable()) > before, 'the packet answered unavailable by the sink');
        // Settled without an acknowledgement: the connection stays open and nothing was written to it.
        expect(tracker.pending).toBe(0);
      } finally {
        await stack.startDmsReplica();
      }
      expect(await stored(device.deviceId)).toEqual([]);
      tracker.send(packet);
      expect(await tracker.next(4)).toEqual(count(3));
      expect(await stored(device.deviceId)).toHaveLength(3);
    });
  });

  describe('over TLS (DEVICE_TLS_CERT_FILE and DEVICE_TLS_KEY_FILE, a certificate made here with openssl)', () => {
    let tls: TlsFiles;
    let secure: TestDeviceGateway;
    beforeAll(async () => {
      tls = makeTlsFiles();
      secure = await startTestDeviceGateway(stack, { DEVICE_TLS_CERT_FILE: tls.serverCert, DEVICE_TLS_KEY_FILE: tls.serverKey });
    });
    afterAll(async () => {
      await secure?.stop();
      tls?.remove();
    });
    const portOf = (address: string | undefined) => Number(new URL(address!).port);
    const addresses = (name: string) => secure.gateway.listening.find((listener) => listener.name === name)!.addresses;

    it('stores what mosquitto_pub publishes over MQTT over TLS with --cafile, beside plain MQTT; refuses an unverified certificate', async () => {
      const [plain, overTls] = addresses('mqtt');
      expect(overTls).toMatch(/^mqtts:\/\//);
      const device = await credential('Mqtt');
      const [first, second, third, fourth] = [ago(6), ago(5), ago(4), ago(3)];
      const publish = (port: number, recordedAt: string, ...extra: string[]) => {
        const reading = { recordedAt, location: { lat: 52.52, lng: 13.405 }, batteryPercent: 70 };
        return run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(port), ...extra, '-u', device.identifier, '-P', device.secret,
          '-t', `devices/${device.identifier}/readings`, '-q', '1', '-m', JSON.stringify(reading)]);
      };
      const viaTls = await publish(portOf(overTls), first, '--cafile', tls.ca);
      expect(viaTls.code, viaTls.output).toBe(0);
      const viaPlain = await publish(portOf(plain), second);
      expect(viaPlain.code, viaPlain.output).toBe(0);
      expect((await stored(device.deviceId)).map((reading) => reading.recordedAt).sort()).toEqual([first, second]);

      // Without the CA mosquitto_pub refuses our certificate (the handshake fails), and nothing is stored.
      const otherCa = makeTlsFiles();
      try {
        const unverified = await publish(portOf(overTls), third, '--cafile', otherCa.ca);
        expect(unverified.code).not.toBe(0);
      } finally {
        otherCa.remove();
      }
      // Plain MQTT on the TLS port gets no CONNACK.
      const plainOnTls = await publish(portOf(overTls), fourth);
      expect(plainOnTls.code).not.toBe(0);
      expect(await stored(device.deviceId)).toHaveLength(2);
    });

    it('acknowledges a Teltonika packet over TLS once stored; plain TCP on that port gets nothing', async () => {
      const [address] = addresses('teltonika');
      expect(address).toMatch(/^tls:\/\//);
      const imei = `35${String(randomInt(0, 10 ** 6)).padStart(6, '0')}${String(randomInt(0, 10 ** 7)).padStart(7, '0')}`;
      const device = await credential('Teltonika', imei);
      const socket = connectTls({ port: portOf(address), host: '127.0.0.1', ca: readFileSync(tls.ca) });
      sockets.push(socket);
      await once(socket, 'secureConnect');
      const tracker = Tracker.over(socket);
      expect(await tracker.login(imei)).toEqual(Buffer.from([0x01]));
      const at = Math.floor(Date.now() / 1000) * 1000 - 15_000;
      tracker.send(encodeAvlPacket(CODEC_8, [
        { timestamp: at, priority: 0, longitude: 253032016, latitude: 547146368, altitude: 100, angle: 45, satellites: 8, speed: 36, eventIoId: 0, io: [] },
      ]));
      expect(await tracker.next(4)).toEqual(count(1));
      expect(await stored(device.deviceId)).toEqual([expect.objectContaining({ recordedAt: new Date(at).toISOString() })]);

      const plain = await Tracker.open(portOf(address), sockets);
      plain.send(encodeHandshake(imei));
      await plain.closed;
      expect(plain.pending).toBe(0);
    });
  });
});

function count(n: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(n);
  return out;
}

function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
