import { connect as connectTcp, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { connectAsync, type IClientOptions, type MqttClient } from 'mqtt';
import mqttPacket, { type Packet } from 'mqtt-packet';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deferred, TestAuthenticator, TestSink } from '../../../../test/support/device-doubles.js';
import { eventually } from '../../../../test/support/eventually.js';
import { makeTlsFiles } from '../../../../test/support/tls-files.js';
import type { SubmitResult } from '../ingest/device-sink.js';
import { FailedAuthLimiter } from './failed-auth-limiter.js';
import { MqttListener, type MqttListenerOptions } from './mqtt-listener.js';
import { PromMqttMetrics } from './mqtt-metrics.js';

const SECRET = 'dvs_secret-of-truck-1';
const reading = (n = 0) => ({ recordedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(), location: { lat: 52.5, lng: 13.4 } });

interface Running {
  listener: MqttListener;
  port: number;
  tlsPort?: number;
  auth: TestAuthenticator;
  sink: TestSink;
  registry: Registry;
}

const running: Running[] = [];
const clients: MqttClient[] = [];

async function start(options: Partial<MqttListenerOptions> = {}): Promise<Running> {
  const auth = new TestAuthenticator();
  auth.add('truck-1', SECRET);
  auth.add('truck-2', 'dvs_secret-of-truck-2');
  const sink = new TestSink();
  const registry = new Registry();
  const listener = new MqttListener(auth, sink, { port: 0, host: '127.0.0.1', metrics: new PromMqttMetrics(registry), ...options });
  const { port, tlsPort } = await listener.start();
  const run = { listener, port, tlsPort, auth, sink, registry };
  running.push(run);
  return run;
}

async function client(run: Running, version: 4 | 5, options: IClientOptions = {}): Promise<MqttClient> {
  const c = await connectAsync(`mqtt://127.0.0.1:${run.port}`, {
    protocolVersion: version,
    username: 'truck-1',
    password: SECRET,
    reconnectPeriod: 0,
    connectTimeout: 5000,
    ...options,
  });
  clients.push(c);
  return c;
}

/** The error a rejected connectAsync gives, with its CONNACK code. */
async function connectError(run: Running, version: 4 | 5, options: IClientOptions): Promise<{ code?: number }> {
  try {
    const c = await client(run, version, options);
    throw new Error(`connected: ${c.connected}`);
  } catch (error) {
    return error as { code?: number };
  }
}

function disconnectPacket(c: MqttClient): Promise<{ reasonCode?: number }> {
  return new Promise((resolve) => c.once('disconnect', (packet) => resolve(packet)));
}

function closed(c: MqttClient): Promise<void> {
  return new Promise((resolve) => c.once('close', () => resolve()));
}

async function metric(run: Running, name: string, labels: Record<string, string>): Promise<number> {
  const found = (await run.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = found?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return value?.value ?? 0;
}

afterEach(async () => {
  for (const c of clients.splice(0)) await c.endAsync(true).catch(() => undefined);
  for (const run of running.splice(0)) await run.listener.stop();
});

describe.each([4, 5] as const)('MQTT listener, protocol version %i', (version) => {
  it('stores a reading published at QoS 1 and acknowledges it', async () => {
    const run = await start();
    const c = await client(run, version);
    await c.publishAsync('devices/truck-1/readings', JSON.stringify(reading()), { qos: 1 });
    expect(run.sink.submissions).toHaveLength(1);
    expect(run.sink.submissions[0]!.identity.deviceId).toBe('dev-truck-1');
    expect(run.sink.submissions[0]!.readings).toEqual([reading()]);
    expect(await metric(run, 'device_messages_total', { outcome: 'committed' })).toBe(1);
    expect(await metric(run, 'device_connections', { protocol: 'Mqtt' })).toBe(1);
  });

  it('stores the readings of {"readings":[...]} at QoS 0 and publishes rejected entries to devices/{identifier}/rejected', async () => {
    const run = await start();
    const c = await client(run, version);
    await c.subscribeAsync('devices/truck-1/rejected', { qos: 1 });
    const rejection = new Promise<{ topic: string; body: unknown }>((resolve) => c.once('message', (topic, payload) => resolve({ topic, body: JSON.parse(payload.toString()) })));
    await c.publishAsync('devices/truck-1/readings', JSON.stringify({ readings: [reading(1), { location: null }, reading(2)] }), { qos: 0 });
    const { topic, body } = await rejection;
    expect(topic).toBe('devices/truck-1/rejected');
    expect(body).toEqual({ rejected: [{ index: 1, error: expect.objectContaining({ code: 'InvalidParameter', details: { field: 'recordedAt', issue: 'Required' } }) }] });
    expect(run.sink.submissions[0]!.readings).toHaveLength(3);
  });

  it('refuses a wrong password and an unknown user name with "bad user name or password"', async () => {
    const run = await start();
    const code = version === 5 ? 0x86 : 4;
    expect((await connectError(run, version, { password: 'dvs_wrong' })).code).toBe(code);
    expect((await connectError(run, version, { username: 'nobody', password: SECRET })).code).toBe(code);
    expect((await connectError(run, version, { username: 'truck-2', password: SECRET })).code).toBe(code);
    expect((await connectError(run, version, { username: undefined, password: undefined })).code).toBe(code);
    expect(await metric(run, 'device_refusals_total', { reason: 'bad_credentials' })).toBe(4);
    await eventually(() => run.listener.connectionCount, (n) => n === 0, 'the refused connections closing');
  });

  it("acknowledges and drops a publish to another device's topic, and refuses a subscription outside its own", async () => {
    const run = await start();
    const c = await client(run, version);
    const outside = c.publishAsync('devices/truck-2/readings', JSON.stringify(reading()), { qos: 1 });
    if (version === 5) await expect(outside).rejects.toMatchObject({ code: 0x87 });
    else await outside;
    const suback = await new Promise<{ granted: number[] }>((resolve) => {
      c.once('packetreceive', (packet) => resolve(packet as unknown as { granted: number[] }));
      c.subscribe({ 'devices/truck-2/rejected': { qos: 0 }, 'devices/+/rejected': { qos: 0 }, '#': { qos: 0 }, 'devices/truck-1/#': { qos: 1 } }, () => undefined);
    });
    const failure = version === 5 ? 0x87 : 0x80;
    expect(suback.granted).toEqual([failure, failure, failure, 0]);
    expect(run.sink.submissions).toHaveLength(0);
    expect(await metric(run, 'device_refusals_total', { reason: 'topic_not_allowed' })).toBe(1);
    expect(await metric(run, 'device_refusals_total', { reason: 'subscription_not_allowed' })).toBe(3);
  });

  it('acknowledges a payload that is not a reading without storing it, and says why on devices/{identifier}/rejected', async () => {
    const run = await start();
    const c = await client(run, version);
    await c.subscribeAsync('devices/truck-1/rejected');
    const bodies: unknown[] = [];
    c.on('message', (_topic, payload) => bodies.push(JSON.parse(payload.toString())));
    for (const garbage of ['not json', '[1,2]', '"text"', 'null', JSON.stringify({ readings: [] }), JSON.stringify({ readings: 'x' }), JSON.stringify({ readings: Array.from({ length: 501 }, (_, i) => reading(i)) })]) {
      const published = c.publishAsync('devices/truck-1/readings', garbage, { qos: 1 });
      if (version === 5) await expect(published).rejects.toMatchObject({ code: 0x99 });
      else await published;
    }
    await c.subscribeAsync('devices/truck-1/other'); // one round trip: every rejection before it has arrived
    expect(run.sink.submissions).toHaveLength(0);
    expect(bodies).toHaveLength(7);
    expect(bodies.map((b) => (b as { error: { code: string } }).error.code)).toEqual([
      'MalformedRequest', 'MalformedRequest', 'MalformedRequest', 'MalformedRequest', 'InvalidParameter', 'InvalidParameter', 'InvalidParameter',
    ]);
    expect(await metric(run, 'device_refusals_total', { reason: 'invalid_payload' })).toBe(7);
  });

  it('refuses a payload over 256 KiB without storing it', async () => {
    const run = await start();
    const c = await client(run, version);
    const big = JSON.stringify({ ...reading(), note: 'x'.repeat(256 * 1024) });
    const published = c.publishAsync('devices/truck-1/readings', big, { qos: 1 });
    if (version === 5) await expect(published).rejects.toMatchObject({ code: 0x99 });
    else await published;
    expect(run.sink.submissions).toHaveLength(0);
    // Still connected: the next reading goes through.
    await c.publishAsync('devices/truck-1/readings', JSON.stringify(reading()), { qos: 1 });
    expect(run.sink.submissions).toHaveLength(1);
  });

  it('acknowledges only once the sink committed (a late commit, a late PUBACK)', async () => {
    const run = await start();
    const c = await client(run, version);
    const answer = deferred<SubmitResult>();
    run.sink.next.push(answer.promise);
    let acknowledged = false;
    const published = c.publishAsync('devices/truck-1/readings', JSON.stringify(reading()), { qos: 1 }).then(() => (acknowledged = true));
    await run.sink.waitForSubmissions(1);
    // A round trip after the publish: a PUBACK written at once would have come before this SUBACK.
    await c.subscribeAsync('devices/truck-1/rejected');
    expect(acknowledged).toBe(false);
    answer.resolve({ kind: 'committed', outcome: { accepted: 1, duplicates: 0, unassigned: 0, rejected: [] } });
    await published;
    expect(acknowledged).toBe(true);
  });

  it('sends no PUBACK when the sink is unavailable, closes the connection, and the resend after reconnecting is stored', async () => {
    const run = await start();
    const c = await client(run, version, { reconnectPeriod: 50 });
    run.sink.next.push({ kind: 'unavailable' });
    const gone = closed(c);
    const disconnect = version === 5 ? disconnectPacket(c) : null;
    const published = c.publishAsync('devices/truck-1/readings', JSON.stringify(reading()), { qos: 1 });
    await gone;
    if (disconnect) expect((await disconnect).reasonCode).toBe(0x89);
    await published; // the PUBACK of the resend
    expect(run.sink.submissions).toHaveLength(2);
    expect(run.sink.submissions[1]!.readings).toEqual([reading()]);
    expect(await metric(run, 'device_refusals_total', { reason: 'unavailable' })).toBe(1);
  });

  it('closes the connection when its credential is revoked (watch), and when the sink says revoked', async () => {
    const run = await start();
    const c = await client(run, version);
    expect(run.auth.watching('truck-1')).toBe(1);
    const disconnect = version === 5 ? disconnectPacket(c) : null;
    const gone = closed(c);
    run.auth.revoke('truck-1');
    await gone;
    if (disconnect) expect((await disconnect).reasonCode).toBe(0x98);

    run.auth.add('truck-1', SECRET);
    const again = await client(run, version);
    run.sink.next.push({ kind: 'revoked' });
    const goneAgain = closed(again);
    let acknowledged = false;
    void again.publishAsync('devices/truck-1/readings', JSON.stringify(reading()), { qos: 1 }).then(() => (acknowledged = true), () => undefined);
    await goneAgain;
    expect(acknowledged).toBe(false);
    expect(await metric(run, 'device_refusals_total', { reason: 'revoked' })).toBe(2);
  });

  it('hands over to a new connection with the same client id', async () => {
    const run = await start();
    const first = await client(run, version, { clientId: 'tracker-a' });
    const disconnect = version === 5 ? disconnectPacket(first) : null;
    const gone = closed(first);
    const second = await client(run, version, { clientId: 'tracker-a' });
    await gone;
    if (disconnect) expect((await disconnect).reasonCode).toBe(0x8e);
    await second.publishAsync('devices/truck-1/readings', JSON.stringify(reading()), { qos: 1 });
    expect(run.sink.submissions).toHaveLength(1);
  });
});

describe('MQTT listener, MQTT 5 only', () => {
  it('says Maximum QoS 1 and Retain Available 0 in CONNACK, and disconnects a QoS 2 (0x9B) or retained (0x9A) PUBLISH', async () => {
    const run = await start();
    const raw = await rawSession(run.port, 5);
    expect(raw.connack).toMatchObject({ reasonCode: 0, properties: { maximumQoS: 1, retainAvailable: false, maximumPacketSize: 256 * 1024 + 1024 } });
    raw.send({ cmd: 'publish', topic: 'devices/truck-1/readings', payload: Buffer.from(JSON.stringify(reading())), qos: 2, messageId: 1, retain: false, dup: false });
    expect(await raw.next()).toMatchObject({ cmd: 'disconnect', reasonCode: 0x9b });
    await raw.ended;

    const retained = await rawSession(run.port, 5);
    retained.send({ cmd: 'publish', topic: 'devices/truck-1/readings', payload: Buffer.from(JSON.stringify(reading())), qos: 1, messageId: 1, retain: true, dup: false });
    expect(await retained.next()).toMatchObject({ cmd: 'disconnect', reasonCode: 0x9a });
    expect(run.sink.submissions).toHaveLength(0);
    expect(await metric(run, 'device_refusals_total', { reason: 'qos_not_supported' })).toBe(1);
    expect(await metric(run, 'device_refusals_total', { reason: 'retain_not_supported' })).toBe(1);
  });

  it('answers a limited message with PUBACK 0x97 (quota exceeded)', async () => {
    const run = await start();
    const c = await client(run, 5);
    run.sink.next.push({ kind: 'limited', retryAfterSeconds: 1 });
    await expect(c.publishAsync('devices/truck-1/readings', JSON.stringify(reading()), { qos: 1 })).rejects.toMatchObject({ code: 0x97 });
    expect(run.sink.submissions).toHaveLength(1);
    expect(await metric(run, 'device_refusals_total', { reason: 'limited' })).toBe(1);
  });

  it('closes a connection silent for one and a half keep-alive periods with DISCONNECT 0x8D', async () => {
    const run = await start();
    const raw = await rawSession(run.port, 5, 1);
    const started = Date.now();
    expect(await raw.next()).toMatchObject({ cmd: 'disconnect', reasonCode: 0x8d });
    await raw.ended;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
  });

  it('disconnects with 0x82 an UNSUBSCRIBE without filters (it used to throw out of the connection)', async () => {
    const run = await start();
    const raw = await rawSession(run.port, 5);
    // Fixed header, packet id 5, no properties, no topic filter: mqtt-packet parses it, MQTT-3.10.3-2 forbids it.
    raw.socket.write(Buffer.from([0xa2, 0x03, 0x00, 0x05, 0x00]));
    expect(await raw.next()).toMatchObject({ cmd: 'disconnect', reasonCode: 0x82 });
    await raw.ended;
  });

  it('disconnects with 0x95 a packet over the maximum packet size', async () => {
    const run = await start({ maxPacketBytes: 2048 });
    const raw = await rawSession(run.port, 5);
    raw.send({ cmd: 'publish', topic: 'devices/truck-1/readings', payload: Buffer.alloc(4096, 0x20), qos: 1, messageId: 7, retain: false, dup: false });
    expect(await raw.next()).toMatchObject({ cmd: 'disconnect', reasonCode: 0x95 });
    await raw.ended;
    expect(run.sink.submissions).toHaveLength(0);
  });
});

describe('MQTT listener, MQTT 3.1.1 only', () => {
  it('ignores the retain flag and runs the full QoS 2 flow, PUBREC only after the commit', async () => {
    const run = await start();
    const c = await client(run, 4);
    const answer = deferred<SubmitResult>();
    run.sink.next.push(answer.promise);
    let completed = false;
    const published = c.publishAsync('devices/truck-1/readings', JSON.stringify(reading(1)), { qos: 2, retain: true }).then(() => (completed = true));
    await run.sink.waitForSubmissions(1);
    await c.subscribeAsync('devices/truck-1/rejected');
    expect(completed).toBe(false);
    answer.resolve({ kind: 'committed', outcome: { accepted: 1, duplicates: 0, unassigned: 0, rejected: [] } });
    await published;
    expect(run.sink.submissions[0]!.readings).toEqual([reading(1)]);
  });

  it('holds the PUBACK of a limited message, reading nothing more, until the budget allows', async () => {
    const run = await start();
    const c = await client(run, 4);
    run.sink.next.push({ kind: 'limited', retryAfterSeconds: 1 });
    const started = Date.now();
    const first = c.publishAsync('devices/truck-1/readings', JSON.stringify(reading(1)), { qos: 1 });
    await run.sink.waitForSubmissions(1);
    const second = c.publishAsync('devices/truck-1/readings', JSON.stringify(reading(2)), { qos: 1 });
    await first;
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    await second;
    // The second message was read only after the retry of the first: the socket was paused meanwhile.
    expect(run.sink.submissions.map((s) => s.readings)).toEqual([[reading(1)], [reading(1)], [reading(2)]]);
  });

  it('skips a packet over the maximum packet size without buffering it and acknowledges it', async () => {
    const run = await start({ maxPacketBytes: 2048 });
    const c = await client(run, 4);
    await c.publishAsync('devices/truck-1/readings', JSON.stringify({ ...reading(), note: 'x'.repeat(8192) }), { qos: 1 });
    await c.publishAsync('devices/truck-1/readings', JSON.stringify(reading()), { qos: 1 });
    expect(run.sink.submissions).toHaveLength(1);
    expect(await metric(run, 'device_refusals_total', { reason: 'packet_too_large' })).toBe(1);
  });
});

describe('MQTT listener, before authentication', () => {
  it('closes a connection that does not authenticate before the deadline', async () => {
    const run = await start({ authDeadlineMs: 200 });
    const socket = await openSocket(run.port);
    const started = Date.now();
    await new Promise((resolve) => socket.once('close', resolve));
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(await metric(run, 'device_refusals_total', { reason: 'auth_deadline' })).toBe(1);
  });

  it('closes a connection whose CONNECT is still authenticating when the deadline passes', async () => {
    const run = await start({ authDeadlineMs: 200 });
    const hang = deferred<void>();
    run.auth.authenticateHook = () => hang.promise;
    const socket = await openSocket(run.port);
    socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId: 'x', clean: true, keepalive: 60, username: 'truck-1', password: Buffer.from(SECRET) }));
    await new Promise((resolve) => socket.once('close', resolve));
    hang.resolve();
    await eventually(() => run.listener.connectionCount, (n) => n === 0, 'the connection closing');
    expect(await metric(run, 'device_refusals_total', { reason: 'auth_deadline' })).toBe(1);
  });

  it('closes a connection announcing a packet over the pre-authentication limit, without reading its body', async () => {
    const run = await start();
    const socket = await openSocket(run.port);
    // A CONNECT header announcing 1 MB; the body never comes.
    socket.write(Buffer.from([0x10, 0x80, 0x80, 0x40]));
    await new Promise((resolve) => socket.once('close', resolve));
    expect(await metric(run, 'device_refusals_total', { reason: 'packet_too_large' })).toBe(1);
  });

  it('closes a connection whose first packet is not CONNECT, or is not MQTT at all', async () => {
    const run = await start();
    for (const bytes of [mqttPacket.generate({ cmd: 'pingreq' }), Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01])]) {
      const socket = await openSocket(run.port);
      socket.write(bytes);
      await new Promise((resolve) => socket.once('close', resolve));
    }
    expect(await metric(run, 'device_refusals_total', { reason: 'protocol_error' })).toBe(3);
    await eventually(() => run.listener.connectionCount, (n) => n === 0, 'the connections closing');
  });

  it.each([4, 5] as const)('refuses an address after too many failed authentications, even with a good secret (MQTT %i)', async (version) => {
    const run = await start({ failedAuthLimiter: new FailedAuthLimiter({ maxFailures: 2, windowMs: 60_000 }) });
    const bad = version === 5 ? 0x86 : 4;
    expect((await connectError(run, version, { password: 'dvs_guess-1' })).code).toBe(bad);
    expect((await connectError(run, version, { username: 'guess', password: 'dvs_guess-2' })).code).toBe(bad);
    let checked = 0;
    run.auth.authenticateHook = async () => void checked++;
    expect((await connectError(run, version, {})).code).toBe(version === 5 ? 0x8a : 5);
    expect(checked).toBe(0);
    expect(await metric(run, 'device_refusals_total', { reason: 'address_blocked' })).toBe(1);
  });

  it('refuses connections over the cap at once', async () => {
    const run = await start({ maxConnections: 2 });
    await client(run, 4);
    await client(run, 5, { clientId: 'other' });
    const third = await openSocket(run.port);
    await new Promise((resolve) => third.once('close', resolve));
    expect(await metric(run, 'device_refusals_total', { reason: 'connection_cap' })).toBe(1);
  });
});

describe('MQTT listener, lifecycle', () => {
  let tls: ReturnType<typeof makeTlsFiles>;
  beforeAll(() => {
    tls = makeTlsFiles();
  });
  afterAll(() => tls.remove());

  it('speaks MQTT over TLS on its TLS port when given a certificate', async () => {
    const run = await start({ tls: { cert: readFileSync(tls.serverCert), key: readFileSync(tls.serverKey), port: 0 } });
    const tlsPort = run.tlsPort!;
    const c = await connectAsync(`mqtts://127.0.0.1:${tlsPort}`, { username: 'truck-1', password: SECRET, ca: readFileSync(tls.ca), reconnectPeriod: 0 });
    clients.push(c);
    await c.publishAsync('devices/truck-1/readings', JSON.stringify(reading()), { qos: 1 });
    expect(run.sink.submissions).toHaveLength(1);
  });

  it('stop() waits for the messages in flight, acknowledges them, then closes the connections', async () => {
    const run = await start();
    const c = await client(run, 5);
    const answer = deferred<SubmitResult>();
    run.sink.next.push(answer.promise);
    const published = c.publishAsync('devices/truck-1/readings', JSON.stringify(reading()), { qos: 1 });
    await run.sink.waitForSubmissions(1);
    const order: string[] = [];
    const disconnect = disconnectPacket(c).then((packet) => (order.push('disconnect'), packet));
    const stopping = run.listener.stop().then(() => order.push('stopped'));
    running.splice(running.indexOf(run), 1);
    void published.then(() => order.push('puback'));
    // Until the sink answers, nothing is sent: the PUBACK waits, and so does the DISCONNECT.
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    answer.resolve({ kind: 'committed', outcome: { accepted: 1, duplicates: 0, unassigned: 0, rejected: [] } });
    expect((await disconnect).reasonCode).toBe(0x8b);
    await stopping;
    expect(order).toEqual(['puback', 'disconnect', 'stopped']);
  });
});

describe('MQTT listener, stopping while a limited message waits', () => {
  it('stop() does not wait out the limit: the message goes unacknowledged (the device resends it elsewhere) and the connection closes', async () => {
    const run = await start();
    const c = await client(run, 4);
    run.sink.next.push({ kind: 'limited', retryAfterSeconds: 25 });
    let acknowledged = false;
    void c.publishAsync('devices/truck-1/readings', JSON.stringify(reading()), { qos: 1 }).then(() => (acknowledged = true), () => undefined);
    await run.sink.waitForSubmissions(1);
    const gone = closed(c);
    running.splice(running.indexOf(run), 1);
    const started = Date.now();
    await run.listener.stop();
    await gone;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(acknowledged).toBe(false);
    expect(run.sink.submissions).toHaveLength(1);
  });
});

function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connectTcp(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  });
}

/** A connection driven packet by packet, for what mqtt.js will not send (QoS 2 and retain in MQTT 5, oversized packets). */
async function rawSession(port: number, version: 4 | 5, keepalive = 60) {
  const socket = await openSocket(port);
  const parser = mqttPacket.parser({ protocolVersion: version });
  const packets: Packet[] = [];
  const waiting: ((packet: Packet) => void)[] = [];
  parser.on('packet', (packet: Packet) => {
    const waiter = waiting.shift();
    if (waiter) waiter(packet);
    else packets.push(packet);
  });
  socket.on('data', (chunk) => parser.parse(chunk));
  socket.on('error', () => undefined);
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const send = (packet: Packet) => socket.write(mqttPacket.generate(packet, { protocolVersion: version }));
  const next = () => new Promise<Packet>((resolve) => (packets.length > 0 ? resolve(packets.shift()!) : waiting.push(resolve)));
  send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: version, clientId: `raw-${Math.random()}`, clean: true, keepalive, username: 'truck-1', password: Buffer.from(SECRET) });
  const connack = await next();
  return { socket, send, next, ended, connack };
}
