import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { judgeEntries } from '@tracking/readings';
import { type AvlIo, type AvlRecord, decodeAvlPacket } from './teltonika-codec.js';
import { recordToReading } from './teltonika-mapping.js';

const FRAMES = JSON.parse(readFileSync(new URL('./teltonika-frames.fixture.json', import.meta.url), 'utf8')) as {
  packets: { name: string; hex: string }[];
};
const records = (name: string) => decodeAvlPacket(Buffer.from(FRAMES.packets.find((entry) => entry.name === name)!.hex, 'hex')).records;

function record(overrides: Partial<AvlRecord> = {}): AvlRecord {
  return {
    timestamp: Date.UTC(2026, 10, 27, 8, 0, 0, 123),
    priority: 0,
    longitude: 253032016,
    latitude: 547146368,
    altitude: 111,
    angle: 214,
    satellites: 7,
    speed: 36,
    eventIoId: 0,
    io: [],
    ...overrides,
  };
}

const withIo = (...io: AvlIo[]) => record({ io });

describe('recordToReading on published and captured frames', () => {
  it("maps a fix of Teltonika's FM protocol example", () => {
    expect(recordToReading(records('fm-protocol-4')[0]!)).toEqual({
      recordedAt: '2007-07-25T06:46:38.335Z',
      location: { lat: 54.7146368, lng: 25.3032016, altitudeMeters: 111, speedMps: 4 / 3.6, headingDegrees: 214 },
    });
  });

  it('finds nothing to store in the wiki examples: no fix, no battery, no temperature', () => {
    for (const name of ['wiki-codec8-1', 'wiki-codec8-2', 'wiki-codec8-3', 'wiki-codec8e']) {
      for (const r of records(name)) expect(recordToReading(r)).toBeNull();
    }
  });

  it('keeps the battery level of a record without fix, its location null', () => {
    // Codec 8 Extended from a device: 0 satellites, IO 113 = 1.
    expect(recordToReading(records('traccar-2')[0]!)).toEqual({ recordedAt: '2021-05-10T08:19:55.000Z', location: null, batteryPercent: 1 });
  });

  it('stores no position for a record that repeats the last fix without satellites', () => {
    const [withFix, repeated] = records('traccar-11');
    expect(withFix!.satellites).toBeGreaterThan(0);
    expect(recordToReading(withFix!)).toMatchObject({ location: { lat: 40.9420533, lng: -8.6313433 } });
    expect(repeated!.satellites).toBe(0);
    expect(repeated!.latitude).not.toBe(0);
    expect(recordToReading(repeated!)).toBeNull();
  });

  it('leaves out a Dallas sensor that reports "not connected" (3000)', () => {
    const reading = recordToReading(records('traccar-10')[0]!);
    expect(reading).toMatchObject({ location: { lat: 54.6990336, lng: 25.2618832 } });
    expect(reading).not.toHaveProperty('temperatureC');
  });

  it('reads IO 72 sent in the 2-byte group', () => {
    expect(records('traccar-12').map((r) => recordToReading(r)?.temperatureC)).toEqual([25.6, 24.4, 24.8, 25, 24.9, 24.9, 24.8, 24.8]);
  });

  it('leaves out an IO 113 that is no percentage (another device family uses the id)', () => {
    const reading = recordToReading(records('traccar-8')[0]!);
    expect(reading).toHaveProperty('location');
    expect(reading).not.toHaveProperty('batteryPercent');
  });

  it('gives readings that the judgement of POST /readings accepts, for every captured record', () => {
    const deviceId = '0190c6a4-6f1e-7c39-9d52-5b1f2f6c1a01';
    const readings = FRAMES.packets.flatMap((entry) =>
      decodeAvlPacket(Buffer.from(entry.hex, 'hex'))
        .records.map(recordToReading)
        .filter((reading) => reading !== null),
    );
    expect(readings.length).toBeGreaterThan(30);
    const judged = judgeEntries(readings.map((reading) => ({ ...reading, deviceId })));
    expect(judged.rejected).toEqual([]);
    expect(judged.entries).toHaveLength(readings.length);
  });
});

describe('recordToReading rules', () => {
  it('maps time, position, altitude, heading and speed (km/h to m/s)', () => {
    expect(recordToReading(record())).toEqual({
      recordedAt: '2026-11-27T08:00:00.123Z',
      location: { lat: 54.7146368, lng: 25.3032016, altitudeMeters: 111, speedMps: 10, headingDegrees: 214 },
    });
  });

  it('keeps signs: south, west, below sea level', () => {
    expect(recordToReading(record({ latitude: -339656016, longitude: -86313433, altitude: -12 }))?.location).toMatchObject({
      lat: -33.9656016,
      lng: -8.6313433,
      altitudeMeters: -12,
    });
  });

  it.each([
    ['0 satellites', { satellites: 0 }],
    ['0/0 coordinates', { latitude: 0, longitude: 0 }],
  ])('has no location with %s', (_case, overrides) => {
    expect(recordToReading(record({ ...overrides, io: [{ id: 113, size: 1, value: 50 }] }))).toEqual({
      recordedAt: '2026-11-27T08:00:00.123Z',
      location: null,
      batteryPercent: 50,
    });
    expect(recordToReading(record(overrides))).toBeNull();
  });

  it.each([
    [0, 0],
    [100, 100],
  ])('takes IO 113 = %i as batteryPercent %i', (value, percent) => {
    expect(recordToReading(withIo({ id: 113, size: 1, value }))?.batteryPercent).toBe(percent);
  });

  it('leaves out IO 113 above 100', () => {
    expect(recordToReading(withIo({ id: 113, size: 1, value: 101 }))).not.toHaveProperty('batteryPercent');
  });

  it.each([
    ['4 bytes', 4, 215, 21.5],
    ['4 bytes, negative', 4, 0xffffff9c, -10],
    ['2 bytes, negative', 2, 0xff9c, -10],
    ['1 byte, negative', 1, 0x9c, -10],
    ['the lowest', 4, (-550 >>> 0), -55],
    ['the highest', 4, 1250, 125],
  ] as const)('reads IO 72 in %s as temperatureC', (_case, size, value, celsius) => {
    expect(recordToReading(withIo({ id: 72, size, value }))?.temperatureC).toBe(celsius);
  });

  it('reads IO 72 in 8 bytes', () => {
    expect(recordToReading(withIo({ id: 72, size: 8, value: BigInt.asUintN(64, -15n) }))?.temperatureC).toBe(-1.5);
  });

  it.each([
    ['sensor not ready', 850],
    ['value read error', 2000],
    ['not connected', 3000],
    ['id failed', 4000],
    ['same id', 5000],
    ['below -55 °C', -551 >>> 0],
    ['above 125 °C', 1251],
  ])('leaves out IO 72 for %s (%i)', (_case, value) => {
    const reading = recordToReading(withIo({ id: 72, size: 4, value }));
    expect(reading).not.toHaveProperty('temperatureC');
    expect(reading).toHaveProperty('location');
  });

  it('has nothing to store without fix and with only error codes', () => {
    expect(recordToReading(record({ satellites: 0, io: [{ id: 72, size: 4, value: 850 }] }))).toBeNull();
  });

  it('ignores IO elements it does not map, and NX values', () => {
    expect(recordToReading(withIo({ id: 66, size: 2, value: 12000 }, { id: 385, size: 0, value: Buffer.from('beacon') }))).toEqual(
      recordToReading(record()),
    );
  });

  it('has nothing to store for a timestamp no date can hold (the judgement could not even read it)', () => {
    expect(recordToReading(record({ timestamp: 2 ** 63 }))).toBeNull();
  });
});
