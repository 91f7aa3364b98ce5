import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type AvlRecord, crc16Ibm, encodeCodec8Packet, encodeHandshake, randomImei } from './teltonika-encoder.js';

// Teltonika's published frames, kept beside the device gateway's decoder (read as data, not imported).
const fixture = JSON.parse(readFileSync(new URL('../../device-gateway/src/teltonika/teltonika-frames.fixture.json', import.meta.url), 'utf8')) as {
  handshakes: { name: string; hex: string; imei: string }[];
  packets: { name: string; hex: string }[];
};
const frame = (name: string) => Buffer.from([...fixture.handshakes, ...fixture.packets].find((entry) => entry.name === name)!.hex, 'hex');
const noFix = { priority: 1, longitude: 0, latitude: 0, altitude: 0, angle: 0, satellites: 0, speed: 0, eventIoId: 1 } as const;

describe('the simulator’s Teltonika encoder against Teltonika’s published Codec 8 examples', () => {
  it('encodes the wiki’s IMEI handshake byte for byte', () => {
    expect(encodeHandshake('356307042441013')).toEqual(frame('wiki-imei'));
  });

  it('encodes the 1st example (IO of every width) byte for byte from its decoded values', () => {
    const record: AvlRecord = {
      ...noFix,
      timestamp: 1560161086000, // 2019-06-10T10:04:46Z
      io: [
        { id: 21, size: 1, value: 3 },
        { id: 1, size: 1, value: 1 },
        { id: 66, size: 2, value: 24079 },
        { id: 241, size: 4, value: 24602 },
        { id: 78, size: 8, value: 0n },
      ],
    };
    expect(encodeCodec8Packet([record]).toString('hex')).toBe(frame('wiki-codec8-1').toString('hex'));
  });

  it('encodes the 2nd example and the 3rd (two records) byte for byte', () => {
    const second = { ...noFix, timestamp: 1560161136000, io: [{ id: 21, size: 1, value: 3 }, { id: 1, size: 1, value: 1 }, { id: 66, size: 2, value: 0x5e10 }] } satisfies AvlRecord;
    expect(encodeCodec8Packet([second])).toEqual(frame('wiki-codec8-2'));
    const third = [
      { ...noFix, timestamp: 1560160861000, io: [{ id: 1, size: 1, value: 0 }] },
      { ...noFix, timestamp: 1560160879000, io: [{ id: 1, size: 1, value: 1 }] },
    ] satisfies AvlRecord[];
    expect(encodeCodec8Packet(third)).toEqual(frame('wiki-codec8-3'));
  });

  it('writes negative values (a temperature below zero) in two’s complement, and signed coordinates', () => {
    const packet = encodeCodec8Packet([{ ...noFix, timestamp: 0, latitude: -338_000_000, longitude: -700_000_000, altitude: -5, io: [{ id: 72, size: 4, value: -125 }] }]);
    expect(packet.readInt32BE(8 + 2 + 9)).toBe(-700_000_000);
    expect(packet.readInt32BE(8 + 2 + 13)).toBe(-338_000_000);
    expect(packet.readInt16BE(8 + 2 + 17)).toBe(-5);
    const io72 = packet.indexOf(Buffer.from([72, 0xff, 0xff, 0xff, 0x83]));
    expect(io72).toBeGreaterThan(0);
    expect(packet.readUInt32BE(packet.length - 4)).toBe(crc16Ibm(packet.subarray(8, packet.length - 4)));
  });

  it('refuses what Codec 8 cannot carry', () => {
    expect(() => encodeCodec8Packet([])).toThrow(RangeError);
    expect(() => encodeHandshake('12345')).toThrow(RangeError);
  });

  it('makes 15-digit IMEIs with a valid Luhn check digit (the wiki’s IMEI is one)', () => {
    expect(randomImei('35630704244101', () => 0)).toBe('356307042441013');
    const imei = randomImei();
    expect(imei).toMatch(/^35630704\d{7}$/);
  });
});
