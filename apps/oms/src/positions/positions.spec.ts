import { describe, expect, it } from 'vitest';
import { decodePositions } from '../evaluation/readings-message.js';
import { newestPerShipment } from './shipment-positions.consumer.js';

const device = '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a';
const other = '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8b';
const shipment = '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8c';
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const reading = (recordedAt: string, location: unknown) => ({ recordedAt, receivedAt: '2026-01-01T00:01:00.000Z', location, temperatureC: 3 });
/** A readings publication as the DMS writes it. */
const publication = (devices: unknown[]) => ({ tenantId: device, accountId: other, devices });

describe('a readings message as positions', () => {
  it('gives the located readings of the shipment the device was on', () => {
    const message = publication([
        {
          deviceId: device,
          shipmentId: shipment,
          readings: [reading('2026-01-01T00:00:00.000Z', { lat: 1, lng: 2, accuracyMeters: 3 }), reading('2026-01-01T00:00:01.000Z', null)],
        },
        { deviceId: other, shipmentId: null, readings: [reading('2026-01-01T00:00:02.000Z', { lat: 5, lng: 6 })] },
    ]);
    expect(decodePositions(encode(message))).toEqual([{ shipmentId: shipment, deviceId: device, lat: 1, lng: 2, accuracyMeters: 3, recordedAt: Date.parse('2026-01-01T00:00:00.000Z') }]);
  });

  it('gives none for readings recorded while on no shipment', () => {
    const devices = [{ deviceId: device, shipmentId: null, readings: [reading('2026-01-01T00:00:00.000Z', { lat: 1, lng: 2 })] }];
    expect(decodePositions(encode(publication(devices)))).toEqual([]);
  });

  it.each([
    ['not JSON', new TextEncoder().encode('{')],
    ['null', encode(null)],
    ['no devices', encode({ tenantId: device })],
    ['no account', encode({ tenantId: device, devices: [] })],
    ['a group without a device', encode(publication([{ shipmentId: shipment, readings: [] }]))],
    ['a group without readings', encode(publication([{ deviceId: device, shipmentId: shipment }]))],
    ['a shipment that is no UUID', encode(publication([{ deviceId: device, shipmentId: 'x', readings: [] }]))],
  ])('refuses %s', (_case, data) => {
    expect(() => decodePositions(data)).toThrow();
  });
});

describe('the newest position per shipment', () => {
  const at = (recordedAt: number, deviceId = device) => ({ shipmentId: shipment, deviceId, lat: recordedAt, lng: 0, accuracyMeters: null, recordedAt });

  it('is the latest recordedAt, ties by the larger device id, in any order', () => {
    const positions = [at(1), at(3), at(3, other), at(2)];
    for (const order of [positions, [...positions].reverse()]) expect(newestPerShipment(order)).toEqual([at(3, other)]);
  });
});
