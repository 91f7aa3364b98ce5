import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type SimulatedDevice, type SimulatedReading, TeltonikaSender } from './senders.js';
import { encodeHandshake } from './teltonika-encoder.js';

const imei = '356307042441013';
const tracker: SimulatedDevice = { id: 'd1', serialNumber: 'SIM-1', needsTemperature: true, credential: { id: 'c1', identifier: imei } };
const reading: SimulatedReading = { recordedAt: new Date(1764230400000), lat: 51.9, lng: 4.45, accuracyMeters: 5, temperatureC: -1.5, batteryPercent: 80, speedMps: 10, headingDegrees: 90 };

/**
 * A stand-in for the device gateway's Teltonika port that plays a script per connection: what it does
 * with the handshake and with each packet. The sender's behaviour on the wire, without a stack (the
 * integration spec runs it against the real listener).
 */
let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function gateway(script: (connection: number, socket: Socket, bytes: Buffer) => void): Promise<{ port: number; received: Buffer[][] }> {
  const received: Buffer[][] = [];
  server = createServer((socket) => {
    const index = received.push([]) - 1;
    socket.on('data', (bytes: Buffer) => {
      received[index]!.push(bytes);
      script(index, socket, bytes);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { port: (server!.address() as AddressInfo).port, received };
}

describe('the Teltonika sender on the wire', () => {
  it('sends the handshake, then a Codec 8 packet, and resolves on the acknowledgement of its record count', async () => {
    const { port, received } = await gateway((_, socket, bytes) => {
      if (bytes.equals(encodeHandshake(imei))) socket.write(Buffer.from([1]));
      else socket.write(Buffer.from([0, 0, 0, 1]));
    });
    const sender = new TeltonikaSender('127.0.0.1', port);
    await sender.send(tracker, [reading]);
    await sender.send(tracker, [{ ...reading, recordedAt: new Date(1764230403000) }]);
    await sender.close();
    // One connection for both packets; each packet a Codec 8 packet of one record.
    expect(received).toHaveLength(1);
    const [handshake, first, second] = received[0]!;
    expect(handshake).toEqual(encodeHandshake(imei));
    for (const packet of [first!, second!]) {
      expect(packet.readUInt32BE(0)).toBe(0);
      expect([packet[8], packet[9], packet[packet.length - 5]]).toEqual([0x08, 1, 1]);
    }
  });

  it('reconnects and sends the same packet again when the connection drops before the acknowledgement', async () => {
    const { port, received } = await gateway((connection, socket, bytes) => {
      if (bytes.equals(encodeHandshake(imei))) socket.write(Buffer.from([1]));
      else if (connection === 0) socket.destroy(); // lost, as a gateway killed between commit and acknowledgement
      else socket.write(Buffer.from([0, 0, 0, 1]));
    });
    const sender = new TeltonikaSender('127.0.0.1', port);
    await sender.send(tracker, [reading]);
    await sender.close();
    expect(received).toHaveLength(2);
    expect(received[1]![1]).toEqual(received[0]![1]);
  });

  it('fails without retrying when the IMEI is refused, and when the acknowledgement counts other records', async () => {
    const refusing = await gateway((_, socket) => socket.end(Buffer.from([0])));
    const sender = new TeltonikaSender('127.0.0.1', refusing.port);
    await expect(sender.send(tracker, [reading])).rejects.toThrow(`the device gateway refused IMEI ${imei} (answered 00)`);
    expect(refusing.received).toHaveLength(1);
    await sender.close();
    await new Promise<void>((resolve) => server!.close(() => resolve()));

    const miscounting = await gateway((_, socket, bytes) => socket.write(bytes.equals(encodeHandshake(imei)) ? Buffer.from([1]) : Buffer.from([0, 0, 0, 2])));
    const other = new TeltonikaSender('127.0.0.1', miscounting.port);
    await expect(other.send(tracker, [reading])).rejects.toThrow('acknowledged 2 records of 1');
    await other.close();
  });
});
