import { readFileSync } from 'node:fs';
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { ErrorCode } from '@tracking/contracts';
import type { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeTlsFiles, type TlsFiles } from '../../../../test/support/tls-files.js';
import { DeviceMetrics } from '../ingest/device-metrics.js';
import { eventually } from '../../../../test/support/eventually.js';
import { ConnectionBudget, LocalRateLimiter } from '../ingest/local-limits.js';
import type { DeviceAuthenticator, DeviceIdentity, DeviceProtocol, DeviceSink, SubmitResult } from '../ingest/device-sink.js';
import { type AvlRecord, CODEC_8, CODEC_8_EXTENDED, crc16Ibm, encodeAvlPacket, encodeHandshake } from './teltonika-codec.js';
import { TeltonikaListener, type TeltonikaListenerOptions } from './teltonika-listener.js';

/*
 * The listener over real TCP (and TLS) sockets, against an authenticator and a sink written here: they
 * stand in for the device gateway's own implementations (the DMS credentials, the batching sink), so
 * that each test decides what authentication and the DMS answer, and when.
 */

const FRAMES = JSON.parse(readFileSync(new URL('./teltonika-frames.fixture.json', import.meta.url), 'utf8')) as {
  packets: { name: string; hex: string }[];
  refused: { name: string; hex: string }[];
};
const frame = (name: string) => Buffer.from([...FRAMES.packets, ...FRAMES.refused].find((entry) => entry.name === name)!.hex, 'hex');

const IMEI = '356307042441013';
const OTHER_IMEI = '352093081429150';
const RETIRED_IMEI = '861230043907626';

const ACCEPTED = Buffer.from([1]);
const REFUSED = Buffer.from([0]);
const ack = (count: number) => Buffer.from([0, 0, 0, count]);

function identityOf(imei: string): DeviceIdentity {
  return {
    credentialId: `cred-${imei}`,
    deviceId: `device-${imei}`,
    accountId: 'account-1',
    protocol: 'Teltonika',
    identifier: imei,
  };
}

/** Knows `IMEI` and `OTHER_IMEI`; `RETIRED_IMEI`'s device is retired (null, as for an unknown one). */
class TestAuthenticator implements DeviceAuthenticator {
  readonly calls: [DeviceProtocol, string, string | null][] = [];
  private readonly watchers = new Map<string, Set<() => void>>();
  /** When set, authentication waits for this promise. */
  hold: Promise<void> | undefined;
  /** Every authentication's answer, settled or not. */
  readonly answers: Promise<DeviceIdentity | null>[] = [];

  authenticate(protocol: DeviceProtocol, identifier: string, secret: string | null): Promise<DeviceIdentity | null> {
    this.calls.push([protocol, identifier, secret]);
    const hold = this.hold;
    const answer = (async () => {
      if (hold) await hold;
      return identifier === IMEI || identifier === OTHER_IMEI ? identityOf(identifier) : null;
    })();
    this.answers.push(answer);
    return answer;
  }

  watch(identity: DeviceIdentity, onRevoked: () => void): () => void {
    const set = this.watchers.get(identity.identifier) ?? new Set();
    set.add(onRevoked);
    this.watchers.set(identity.identifier, set);
    return () => set.delete(onRevoked);
  }

  watching(imei: string): number {
    return this.watchers.get(imei)?.size ?? 0;
  }

  revoke(imei: string): void {
    for (const onRevoked of this.watchers.get(imei) ?? []) onRevoked();
  }
}

interface PendingSubmit {
  identity: DeviceIdentity;
  readings: unknown[];
  resolve(result: SubmitResult): void;
}

/** Each submit waits until the test answers it: `next()` hands the test the oldest unanswered one. */
class TestSink implements DeviceSink {
  readonly submitted: PendingSubmit[] = [];
  private waiting: ((submit: PendingSubmit) => void)[] = [];
  private unclaimed: PendingSubmit[] = [];

  submit(identity: DeviceIdentity, readings: unknown[]): Promise<SubmitResult> {
    return new Promise((resolve) => {
      const submit = { identity, readings, resolve };
      this.submitted.push(submit);
      const waiter = this.waiting.shift();
      if (waiter) waiter(submit);
      else this.unclaimed.push(submit);
    });
  }

  next(): Promise<PendingSubmit> {
    const submit = this.unclaimed.shift();
    if (submit) return Promise.resolve(submit);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  get unanswered(): number {
    return this.unclaimed.length;
  }
}

const committed = (accepted: number, rejected: { index: number }[] = []): SubmitResult => ({
  kind: 'committed',
  outcome: {
    accepted,
    duplicates: 0,
    unassigned: 0,
    rejected: rejected.map(({ index }) => ({ index, error: { code: ErrorCode.InvalidParameter, message: 'recordedAt is out of range' } })),
  },
});

/** A raw TCP (or TLS) client that keeps every byte it receives. */
class Device {
  received = Buffer.alloc(0);
  private readers: (() => void)[] = [];
  readonly closed: Promise<void>;

  constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      for (const reader of this.readers.splice(0)) reader();
    });
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  static async open(port: number, tls?: TlsFiles): Promise<Device> {
    const socket = tls
      ? connectTls({ host: '127.0.0.1', port, ca: readFileSync(tls.ca) })
      : connectTcp({ host: '127.0.0.1', port });
    await new Promise<void>((resolve, reject) => {
      socket.once(tls ? 'secureConnect' : 'connect', () => resolve());
      socket.once('error', reject);
    });
    return new Device(socket);
  }

  send(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Resolves once `length` bytes in all were received; rejects if the connection closes first. */
  async receivedAtLeast(length: number): Promise<Buffer> {
    let closed = false;
    void this.closed.then(() => {
      closed = true;
      for (const reader of this.readers.splice(0)) reader();
    });
    while (this.received.length < length) {
      if (closed || this.socket.destroyed) throw new Error(`closed after ${this.received.toString('hex') || 'nothing'}`);
      await new Promise<void>((resolve) => this.readers.push(resolve));
    }
    return this.received.subarray(0, length);
  }

  /** Sends the handshake and waits for the answer byte. */
  async login(imei = IMEI): Promise<Buffer> {
    this.send(encodeHandshake(imei));
    return this.receivedAtLeast(1);
  }

  destroy(): void {
    this.socket.destroy();
  }
}

function avlRecord(overrides: Partial<AvlRecord> = {}): AvlRecord {
  return {
    timestamp: Date.UTC(2026, 10, 27, 8, 0, 0),
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
  };
}

describe('TeltonikaListener', () => {
  let authenticator: TestAuthenticator;
  let sink: TestSink;
  let listener: TeltonikaListener;
  let port: number;
  let registry: Registry;
  const devices: Device[] = [];

  async function start(options: Partial<TeltonikaListenerOptions> = {}, sinkInstead?: DeviceSink): Promise<void> {
    authenticator = new TestAuthenticator();
    sink = new TestSink();
    const metrics = new DeviceMetrics();
    registry = metrics.registry;
    listener = new TeltonikaListener(authenticator, sinkInstead ?? sink, {
      port: 0,
      host: '127.0.0.1',
      authDeadlineMs: 10_000,
      maxConnections: 100,
      metrics,
      ...options,
    });
    port = (await listener.start()).port;
  }

  async function device(tls?: TlsFiles): Promise<Device> {
    const opened = await Device.open(port, tls);
    devices.push(opened);
    return opened;
  }

  async function metric(name: string, labels: Record<string, string>): Promise<number> {
    const found = (await registry.getSingleMetric(name)?.get())?.values.find((value) =>
      Object.entries(labels).every(([key, label]) => value.labels[key] === label),
    );
    return found?.value ?? 0;
  }

  afterEach(async () => {
    for (const opened of devices.splice(0)) opened.destroy();
    await listener?.stop();
  });

  describe('the IMEI handshake', () => {
    it('answers 0x01 to a known IMEI, authenticating it as Teltonika without a secret', async () => {
      await start();
      const tracker = await device();
      expect(await tracker.login()).toEqual(ACCEPTED);
      expect(authenticator.calls).toEqual([['Teltonika', IMEI, null]]);
      expect(authenticator.watching(IMEI)).toBe(1);
    });

    it('answers 0x00 to an unknown IMEI and closes', async () => {
      await start();
      const tracker = await device();
      expect(await tracker.login('490154203237518')).toEqual(REFUSED);
      await tracker.closed;
      expect(tracker.received).toEqual(REFUSED);
      expect(await metric('device_authentication_failures_total', { protocol: 'Teltonika', reason: 'credentials' })).toBe(1);
    });

    it('answers 0x00 to the IMEI of a retired device and closes', async () => {
      await start();
      const tracker = await device();
      expect(await tracker.login(RETIRED_IMEI)).toEqual(REFUSED);
      await tracker.closed;
      expect(authenticator.watching(RETIRED_IMEI)).toBe(0);
    });

    it.each([
      ['garbage before the IMEI', Buffer.concat([Buffer.from('\r\n'), encodeHandshake(IMEI)])],
      ['an HTTP request', Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')],
      ['a packet before any handshake', frame('wiki-codec8-1')],
    ])('answers 0x00 to %s and closes, without asking the authenticator', async (_case, bytes) => {
      await start();
      const tracker = await device();
      tracker.send(bytes);
      await tracker.closed;
      expect(tracker.received).toEqual(REFUSED);
      expect(authenticator.calls).toEqual([]);
    });

    it('reads a handshake that arrives one byte at a time', async () => {
      await start();
      const tracker = await device();
      for (const byte of encodeHandshake(IMEI)) tracker.send(Buffer.from([byte]));
      expect(await tracker.receivedAtLeast(1)).toEqual(ACCEPTED);
    });

    it('closes a connection that sends nothing before the deadline', async () => {
      await start({ authDeadlineMs: 300 });
      const tracker = await device();
      tracker.send(encodeHandshake(IMEI).subarray(0, 5));
      await tracker.closed;
      expect(tracker.received).toEqual(Buffer.alloc(0));
      expect(await metric('device_authentication_failures_total', { protocol: 'Teltonika', reason: 'timeout' })).toBe(1);
    });

    it('closes a connection whose authentication outlasts the deadline', async () => {
      await start({ authDeadlineMs: 300 });
      let release!: () => void;
      authenticator.hold = new Promise((resolve) => (release = resolve));
      const tracker = await device();
      tracker.send(encodeHandshake(IMEI));
      await tracker.closed;
      release();
      // The listener's continuation after the late answer runs before this one (it awaited it first).
      await Promise.all(authenticator.answers);
      expect(tracker.received).toEqual(Buffer.alloc(0));
      expect(authenticator.watching(IMEI)).toBe(0);
    });

    it('closes without an answer when authentication itself fails (the DMS unreachable): the device retries later', async () => {
      await start();
      authenticator.hold = Promise.reject(new Error('DMS unreachable'));
      authenticator.hold.catch(() => undefined);
      const tracker = await device();
      tracker.send(encodeHandshake(IMEI));
      await tracker.closed;
      expect(tracker.received).toEqual(Buffer.alloc(0));
      expect(authenticator.watching(IMEI)).toBe(0);
    });

    it('closes connections beyond the cap as they arrive', async () => {
      await start({ maxConnections: 2 });
      const first = await device();
      const second = await device();
      expect(await first.login()).toEqual(ACCEPTED);
      const third = await device();
      await third.closed;
      expect(await second.login(OTHER_IMEI)).toEqual(ACCEPTED);
    });

    it('refuses an address after too many unknown IMEIs, even a known IMEI, without asking the authenticator', async () => {
      await start({ failedAuth: new LocalRateLimiter({ quota: 2, windowSeconds: 60, burst: 2 }) });
      for (const imei of ['490154203237518', '490154203237519']) {
        const guess = await device();
        expect(await guess.login(imei)).toEqual(REFUSED);
        await guess.closed;
      }
      const asked = authenticator.calls.length;
      const tracker = await device();
      expect(await tracker.login()).toEqual(REFUSED);
      await tracker.closed;
      expect(authenticator.calls).toHaveLength(asked);
      expect(await metric('device_authentication_failures_total', { protocol: 'Teltonika', reason: 'credentials' })).toBe(2);
      expect(await metric('device_authentication_failures_total', { protocol: 'Teltonika', reason: 'address-limit' })).toBe(1);
    });

    it('takes a place of the shared connection budget per connection and gives it back on close', async () => {
      const budget = new ConnectionBudget(1);
      await start({ connectionSlots: budget });
      const first = await device();
      expect(await first.login()).toEqual(ACCEPTED);
      expect(budget.count).toBe(1);
      const second = await device();
      await second.closed;
      expect(second.received).toEqual(Buffer.alloc(0));
      expect(await metric('device_refusals_total', { protocol: 'Teltonika', reason: 'connection-limit' })).toBe(1);
      first.destroy();
      await first.closed;
      await eventually(() => budget.count, (n) => n === 0, 'the place given back');
    });
  });

  describe('AVL packets', () => {
    it('submits the readings of a packet and acknowledges its record count only once committed', async () => {
      await start();
      const tracker = await device();
      await tracker.login();
      tracker.send(encodeAvlPacket(CODEC_8, [avlRecord(), avlRecord({ timestamp: Date.UTC(2026, 10, 27, 8, 0, 30) })]));

      const submit = await sink.next();
      expect(submit.identity).toEqual(identityOf(IMEI));
      expect(submit.readings).toEqual([
        {
          recordedAt: '2026-11-27T08:00:00.000Z',
          location: { lat: 54.7146368, lng: 25.3032016, altitudeMeters: 111, speedMps: 20, headingDegrees: 90 },
          batteryPercent: 80,
        },
        {
          recordedAt: '2026-11-27T08:00:30.000Z',
          location: { lat: 54.7146368, lng: 25.3032016, altitudeMeters: 111, speedMps: 20, headingDegrees: 90 },
          batteryPercent: 80,
        },
      ]);
      // Submitted but not committed: the device has its 0x01 and nothing more.
      expect(tracker.received).toEqual(ACCEPTED);

      submit.resolve(committed(2));
      expect(await tracker.receivedAtLeast(5)).toEqual(Buffer.concat([ACCEPTED, ack(2)]));
      expect(await metric('device_readings_total', { protocol: 'Teltonika', outcome: 'accepted' })).toBe(2);
      expect(await metric('device_messages_total', { protocol: 'Teltonika', outcome: 'committed' })).toBe(1);
      expect(await metric('device_connections', { protocol: 'Teltonika' })).toBe(1);
    });

    it.each([
      ['Codec 8', CODEC_8],
      ['Codec 8 Extended', CODEC_8_EXTENDED],
    ] as const)('takes %s', async (_name, codec) => {
      await start();
      const tracker = await device();
      await tracker.login();
      tracker.send(encodeAvlPacket(codec, [avlRecord()]));
      (await sink.next()).resolve(committed(1));
      expect(await tracker.receivedAtLeast(5)).toEqual(Buffer.concat([ACCEPTED, ack(1)]));
    });

    it("takes the captured frames of real devices and acknowledges each with its record count", async () => {
      await start();
      const tracker = await device();
      await tracker.login();
      let expected = ACCEPTED;
      for (const name of ['traccar-1', 'traccar-2', 'traccar-6', 'traccar-11', 'traccar-12']) {
        const bytes = frame(name);
        const count = bytes.readUInt8(9);
        tracker.send(bytes);
        const submit = await sink.next();
        submit.resolve(committed(submit.readings.length));
        expected = Buffer.concat([expected, ack(count)]);
        expect(await tracker.receivedAtLeast(expected.length)).toEqual(expected);
      }
    });

    it('reads a packet split across many writes, and its handshake in the same stream', async () => {
      await start();
      const tracker = await device();
      const stream = Buffer.concat([encodeHandshake(IMEI), frame('fm-protocol-4')]);
      tracker.send(stream.subarray(0, 17));
      await tracker.receivedAtLeast(1);
      for (let at = 17; at < stream.length; at += 7) tracker.send(stream.subarray(at, at + 7));
      const submit = await sink.next();
      expect(submit.readings).toHaveLength(4);
      submit.resolve(committed(4));
      expect(await tracker.receivedAtLeast(5)).toEqual(Buffer.concat([ACCEPTED, ack(4)]));
    });

    it('takes packets sent right after the handshake, before the 0x01', async () => {
      await start();
      const tracker = await device();
      tracker.send(Buffer.concat([encodeHandshake(IMEI), encodeAvlPacket(CODEC_8, [avlRecord()])]));
      (await sink.next()).resolve(committed(1));
      expect(await tracker.receivedAtLeast(5)).toEqual(Buffer.concat([ACCEPTED, ack(1)]));
    });

    it('keeps one packet in flight: a second packet in the same write waits for the first to commit', async () => {
      await start();
      const tracker = await device();
      await tracker.login();
      const first = encodeAvlPacket(CODEC_8, [avlRecord()]);
      const second = encodeAvlPacket(CODEC_8, [avlRecord({ timestamp: Date.UTC(2026, 10, 27, 8, 1) }), avlRecord({ timestamp: Date.UTC(2026, 10, 27, 8, 2) })]);
      tracker.send(Buffer.concat([first, second]));

      const one = await sink.next();
      expect(one.readings).toHaveLength(1);
      expect(sink.submitted).toHaveLength(1);
      one.resolve(committed(1));
      const two = await sink.next();
      expect(two.readings).toHaveLength(2);
      expect(await tracker.receivedAtLeast(5)).toEqual(Buffer.concat([ACCEPTED, ack(1)]));
      two.resolve(committed(2));
      expect(await tracker.receivedAtLeast(9)).toEqual(Buffer.concat([ACCEPTED, ack(1), ack(2)]));
    });

    it('submits newest-first records as they come, and acknowledges them all', async () => {
      await start();
      const tracker = await device();
      await tracker.login();
      const times = [Date.UTC(2026, 10, 27, 8, 3), Date.UTC(2026, 10, 27, 8, 2), Date.UTC(2026, 10, 27, 8, 1)];
      tracker.send(encodeAvlPacket(CODEC_8_EXTENDED, times.map((timestamp) => avlRecord({ timestamp }))));
      const submit = await sink.next();
      expect(submit.readings.map((reading) => (reading as { recordedAt: string }).recordedAt)).toEqual(times.map((t) => new Date(t).toISOString()));
      submit.resolve(committed(3));
      expect(await tracker.receivedAtLeast(5)).toEqual(Buffer.concat([ACCEPTED, ack(3)]));
    });

    it('acknowledges and counts records with nothing to store without sending them to the DMS', async () => {
      await start();
      const tracker = await device();
      await tracker.login();
      const noFix = avlRecord({ satellites: 0, io: [] });
      tracker.send(encodeAvlPacket(CODEC_8, [noFix, avlRecord(), noFix]));
      const submit = await sink.next();
      expect(submit.readings).toHaveLength(1);
      submit.resolve(committed(1));
      expect(await tracker.receivedAtLeast(5)).toEqual(Buffer.concat([ACCEPTED, ack(3)]));
      expect(await metric('device_readings_total', { protocol: 'Teltonika', outcome: 'empty' })).toBe(2);

      // A packet of nothing but such records: acknowledged at once, the DMS never asked.
      tracker.send(frame('wiki-codec8-3'));
      expect(await tracker.receivedAtLeast(9)).toEqual(Buffer.concat([ACCEPTED, ack(3), ack(2)]));
      expect(sink.submitted).toHaveLength(1);
    });

    it('acknowledges records the judgement refuses (resending cannot fix them) and counts them', async () => {
      await start();
      const tracker = await device();
      await tracker.login();
      tracker.send(encodeAvlPacket(CODEC_8, [avlRecord(), avlRecord({ timestamp: Date.UTC(2001, 0, 1) })]));
      (await sink.next()).resolve(committed(1, [{ index: 1 }]));
      expect(await tracker.receivedAtLeast(5)).toEqual(Buffer.concat([ACCEPTED, ack(2)]));
      expect(await metric('device_readings_total', { protocol: 'Teltonika', outcome: 'rejected' })).toBe(1);
    });

    it.each([
      ['unavailable', { kind: 'unavailable' } as const],
      ['limited', { kind: 'limited', retryAfterSeconds: 0.05 } as const],
    ])('does not acknowledge a packet the sink answers %s; the resend is submitted again, the same readings', async (_name, result) => {
      await start();
      const tracker = await device();
      await tracker.login();
      const packet = encodeAvlPacket(CODEC_8, [avlRecord(), avlRecord({ timestamp: Date.UTC(2026, 10, 27, 8, 5) })]);
      tracker.send(packet);
      const first = await sink.next();
      first.resolve(result);

      tracker.send(packet);
      const resend = await sink.next();
      expect(resend.readings).toEqual(first.readings);
      resend.resolve(committed(2));
      // A next packet of one record: once its acknowledgement is in, every earlier one is too (TCP keeps
      // the order), and there must be exactly one before it, the resend's.
      tracker.send(encodeAvlPacket(CODEC_8, [avlRecord({ timestamp: Date.UTC(2026, 10, 27, 8, 6) })]));
      (await sink.next()).resolve(committed(1));
      await tracker.receivedAtLeast(9);
      expect(tracker.received).toEqual(Buffer.concat([ACCEPTED, ack(2), ack(1)]));
      expect(await metric('device_messages_total', { protocol: 'Teltonika', outcome: result.kind })).toBe(1);
    });

    it('treats a submit that throws as unavailable: no acknowledgement, the connection stays', async () => {
      await start({}, { submit: () => Promise.reject(new Error('NATS is down')) });
      const tracker = await device();
      await tracker.login();
      tracker.send(encodeAvlPacket(CODEC_8, [avlRecord()]));
      // Wait for the outcome through the metric the listener counts once the submit settled.
      while ((await metric('device_messages_total', { protocol: 'Teltonika', outcome: 'unavailable' })) === 0) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(tracker.received).toEqual(ACCEPTED);
      expect(tracker.socket.destroyed).toBe(false);
    });

    it('closes the connection when the sink says the credential was revoked', async () => {
      await start();
      const tracker = await device();
      await tracker.login();
      tracker.send(encodeAvlPacket(CODEC_8, [avlRecord()]));
      (await sink.next()).resolve({ kind: 'revoked' });
      await tracker.closed;
      expect(tracker.received).toEqual(ACCEPTED);
    });

    it('closes the connection when watch() reports the credential revoked', async () => {
      await start();
      const tracker = await device();
      const other = await device();
      await tracker.login();
      await other.login(OTHER_IMEI);
      authenticator.revoke(IMEI);
      await tracker.closed;
      expect(authenticator.watching(IMEI)).toBe(0);
      // The other device goes on.
      other.send(encodeAvlPacket(CODEC_8, [avlRecord()]));
      (await sink.next()).resolve(committed(1));
      expect(await other.receivedAtLeast(5)).toEqual(Buffer.concat([ACCEPTED, ack(1)]));
    });

    it('does not acknowledge a packet committed after its connection was revoked', async () => {
      await start();
      const tracker = await device();
      await tracker.login();
      tracker.send(encodeAvlPacket(CODEC_8, [avlRecord()]));
      const submit = await sink.next();
      authenticator.revoke(IMEI);
      await tracker.closed;
      submit.resolve(committed(1));
      expect(tracker.received).toEqual(ACCEPTED);
    });

    it.each([
      ['a bad CRC (a captured frame edited after capture)', 'traccar-edited-crc'],
      ['Codec 16', 'traccar-codec16'],
      ['Codec 12', 'traccar-codec12'],
      ['a data length of 0', 'traccar-zero-length'],
    ])('closes without acknowledgement on %s', async (_case, name) => {
      await start();
      const tracker = await device();
      await tracker.login();
      tracker.send(frame(name));
      await tracker.closed;
      expect(tracker.received).toEqual(ACCEPTED);
      expect(sink.submitted).toEqual([]);
      expect(await metric('device_messages_total', { protocol: 'Teltonika', outcome: 'malformed' })).toBe(1);
    });

    it('closes on a hostile length before buffering it', async () => {
      await start({ maxDataLength: 2048 });
      const tracker = await device();
      await tracker.login();
      tracker.send(Buffer.from('000000007FFFFFFF08', 'hex'));
      await tracker.closed;
      expect(tracker.received).toEqual(ACCEPTED);
    });

    it('closes on a record-count mismatch with a valid CRC', async () => {
      await start();
      const tracker = await device();
      await tracker.login();
      const packet = encodeAvlPacket(CODEC_8, [avlRecord(), avlRecord({ timestamp: 1 })]);
      packet[packet.length - 5] = 3;
      packet.writeUInt32BE(crc16Ibm(packet, 8, packet.length - 4), packet.length - 4);
      tracker.send(packet);
      await tracker.closed;
      expect(sink.submitted).toEqual([]);
    });

    it('acknowledges the good packet before a bad one in the same stream, then closes', async () => {
      await start();
      const tracker = await device();
      await tracker.login();
      tracker.send(Buffer.concat([encodeAvlPacket(CODEC_8, [avlRecord()]), frame('traccar-edited-crc')]));
      (await sink.next()).resolve(committed(1));
      await tracker.closed;
      expect(tracker.received).toEqual(Buffer.concat([ACCEPTED, ack(1)]));
    });
  });

  describe('stop', () => {
    it('stops accepting, lets the packet in flight commit and be acknowledged, then closes', async () => {
      await start();
      const tracker = await device();
      await tracker.login();
      tracker.send(encodeAvlPacket(CODEC_8, [avlRecord()]));
      const submit = await sink.next();
      const stopped = listener.stop();
      await expect(Device.open(port)).rejects.toThrow();
      submit.resolve(committed(1));
      await stopped;
      await tracker.closed;
      expect(tracker.received).toEqual(Buffer.concat([ACCEPTED, ack(1)]));
    });
  });

  describe('over TLS', () => {
    let tls: TlsFiles;
    beforeAll(() => {
      tls = makeTlsFiles();
    });
    afterAll(() => tls.remove());

    it('speaks the same protocol inside TLS when certificate files are given', async () => {
      await start({ tls: { certFile: tls.serverCert, keyFile: tls.serverKey } });
      const tracker = await device(tls);
      expect(await tracker.login()).toEqual(ACCEPTED);
      tracker.send(encodeAvlPacket(CODEC_8_EXTENDED, [avlRecord()]));
      (await sink.next()).resolve(committed(1));
      expect(await tracker.receivedAtLeast(5)).toEqual(Buffer.concat([ACCEPTED, ack(1)]));
    });

    it('closes a connection that does not finish its TLS handshake before the deadline', async () => {
      await start({ tls: { certFile: tls.serverCert, keyFile: tls.serverKey }, authDeadlineMs: 300 });
      const silent = await device();
      await silent.closed;
      expect(await metric('device_authentication_failures_total', { protocol: 'Teltonika', reason: 'timeout' })).toBe(1);
    });

    it('refuses a plain TCP client', async () => {
      await start({ tls: { certFile: tls.serverCert, keyFile: tls.serverKey } });
      const plain = await device();
      plain.send(encodeHandshake(IMEI));
      await plain.closed;
      expect(authenticator.calls).toEqual([]);
    });
  });
});
