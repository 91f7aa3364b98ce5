import { connect as connectTcp, type Socket } from 'node:net';
import fc from 'fast-check';
import { connectAsync } from 'mqtt';
import mqttPacket from 'mqtt-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../../test/support/eventually.js';
import { TestAuthenticator, TestSink } from '../../../../test/support/device-doubles.js';
import { MqttListener } from './mqtt-listener.js';

/**
 * Hostile bytes after a valid CONNECT: whatever arrives, the listener answers or closes the connection,
 * never throws, never stores anything, and goes on serving well-behaved devices.
 */

const SECRET = 'dvs_hostile';

describe('MQTT listener under hostile input', () => {
  const auth = new TestAuthenticator();
  const sink = new TestSink();
  let listener: MqttListener;
  let port: number;

  beforeAll(async () => {
    auth.add('dev-h', SECRET);
    listener = new MqttListener(auth, sink, { port: 0, host: '127.0.0.1', maxPacketBytes: 8192, failedAuthLimiter: null });
    ({ port } = await listener.start());
  });

  afterAll(() => listener.stop());

  /** Connects, authenticates with `version`, writes `bytes`, then ends; resolves when the socket closed. */
  async function send(version: 4 | 5, bytes: Buffer): Promise<void> {
    const socket: Socket = await new Promise((resolve, reject) => {
      const s = connectTcp(port, '127.0.0.1', () => resolve(s));
      s.on('error', reject);
    });
    socket.on('error', () => undefined);
    socket.on('data', () => undefined);
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: version, clientId: '', clean: true, keepalive: 30, username: 'dev-h', password: Buffer.from(SECRET) }, { protocolVersion: version }));
    socket.write(bytes);
    socket.end();
    await closed;
  }

  const validPackets = (version: 4 | 5) =>
    [
      { cmd: 'publish', topic: 'devices/dev-h/other', payload: Buffer.from('x'), qos: 1, messageId: 3, retain: false, dup: false },
      { cmd: 'subscribe', messageId: 4, subscriptions: [{ topic: 'devices/dev-h/rejected', qos: 0 }] },
      { cmd: 'unsubscribe', messageId: 5, unsubscriptions: ['devices/dev-h/rejected'] },
      { cmd: 'pingreq' },
      { cmd: 'pubrel', messageId: 6 },
    ].map((packet) => mqttPacket.generate(packet as mqttPacket.Packet, { protocolVersion: version }));

  it.each([4, 5] as const)('survives random bytes and mutated packets (MQTT %i)', async (version) => {
    const packets = validPackets(version);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ minLength: 1, maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
          fc
            .tuple(fc.constantFrom(...packets), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }))
            .map(([packet, edits]) => {
              const copy = Buffer.from(packet);
              for (const [at, value] of edits) copy[at % copy.length] = value;
              return copy;
            }),
        ),
        (bytes) => send(version, bytes),
      ),
      { numRuns: 150 },
    );
    expect(sink.submissions).toHaveLength(0);
    await eventually(() => listener.connectionCount, (n) => n === 0, 'every hostile connection closing');

    const client = await connectAsync(`mqtt://127.0.0.1:${port}`, { protocolVersion: version, username: 'dev-h', password: SECRET, reconnectPeriod: 0 });
    await client.publishAsync('devices/dev-h/readings', JSON.stringify({ recordedAt: '2026-01-01T00:00:00Z' }), { qos: 1 });
    await client.endAsync();
    expect(sink.submissions).toHaveLength(1);
    sink.submissions.length = 0;
  });
});
