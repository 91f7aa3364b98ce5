import { describe, expect, it } from 'vitest';
import { decodeShipmentReadings } from './readings-message.js';
import { byShipment } from './evaluation.consumer.js';

const tenantId = '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f80';
const accountId = '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f81';
const device = '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a';
const shipment = '0190A4A0-5D2E-7C4B-9F1A-3B2C1D0E9F8C';
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const reading = (recordedAt: string) => ({ recordedAt, receivedAt: '2026-01-01T00:01:00.000Z', location: null, temperatureC: 3 });

describe('a readings message for the evaluation', () => {
  it('gives a release marker as a release entry of the device at releasedAt, received with its message', () => {
    const message = { tenantId, accountId, receivedAt: '2026-01-01T00:02:00.000Z', devices: [{ deviceId: device, shipmentId: shipment, readings: [], releasedAt: '2026-01-01T00:01:30.001Z' }] };
    expect(decodeShipmentReadings(encode(message))).toEqual([
      {
        tenantId,
        accountId,
        shipmentId: shipment.toLowerCase(),
        readings: [{ deviceId: device, recordedAt: '2026-01-01T00:01:30.001Z', receivedAt: '2026-01-01T00:02:00.000Z', release: true }],
      },
    ]);
  });

  it("gives each shipment's readings, with the device on each, and leaves out readings recorded on no shipment", () => {
    const message = {
      tenantId,
      accountId,
      devices: [
        { deviceId: device, shipmentId: shipment, readings: [reading('2026-01-01T00:00:00.000Z')] },
        { deviceId: device, shipmentId: null, readings: [reading('2026-01-01T00:00:01.000Z')] },
      ],
    };
    expect(decodeShipmentReadings(encode(message))).toEqual([
      { tenantId, accountId, shipmentId: shipment.toLowerCase(), readings: [{ ...reading('2026-01-01T00:00:00.000Z'), deviceId: device }] },
    ]);
  });

  it("takes readings as the DMS publishes them: receivedAt on the message, null fields left out; and those of older messages, with receivedAt on each", () => {
    const compact = { id: '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f90', recordedAt: '2026-01-01T00:00:00.000Z', location: { lat: 1, lng: 2 }, shockG: 4 };
    const older = { ...reading('2026-01-01T00:00:01.000Z'), receivedAt: '2026-01-01T00:02:00.000Z' };
    const message = { tenantId, accountId, receivedAt: '2026-01-01T00:01:00.000Z', devices: [{ deviceId: device, shipmentId: shipment, readings: [compact, older, { id: 'x' }] }] };
    expect(decodeShipmentReadings(encode(message))).toEqual([
      {
        tenantId,
        accountId,
        shipmentId: shipment.toLowerCase(),
        readings: [
          { ...compact, deviceId: device, receivedAt: '2026-01-01T00:01:00.000Z' },
          { ...older, deviceId: device },
        ],
      },
    ]);
  });

  it.each([
    ['not JSON', new TextEncoder().encode('{')],
    ['null', encode(null)],
    ['no tenant', encode({ accountId, devices: [] })],
    ['no devices', encode({ tenantId, accountId })],
    ['a group without a device', encode({ tenantId, accountId, devices: [{ shipmentId: shipment, readings: [] }] })],
    ['a shipment that is no UUID', encode({ tenantId, accountId, devices: [{ deviceId: device, shipmentId: 'x', readings: [] }] })],
  ])('refuses %s', (_case, data) => {
    expect(() => decodeShipmentReadings(data)).toThrow();
  });

  it('merges the groups of one shipment from several messages of a batch', () => {
    const group = (recordedAt: string) => ({ tenantId, accountId, shipmentId: shipment, readings: [{ ...reading(recordedAt), deviceId: device }] });
    const merged = byShipment([group('2026-01-01T00:00:00.000Z'), group('2026-01-01T00:00:01.000Z')]);
    expect(merged).toHaveLength(1);
    expect(merged[0]?.readings.map((r) => r.recordedAt)).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z']);
  });
});
