import type { ReadingsPublished } from '@tracking/contracts';
import { validate as isUuid } from 'uuid';
import type { LastPosition } from '../shipments/shipment.repository.js';

/**
 * The located readings of one message of the readings stream, as candidate positions of the shipment
 * each device was on when it recorded them; none for a device that was on none. A message that is not a
 * readings publication throws (the consumer terminates it and logs it).
 */
export function decodePositions(data: Uint8Array): LastPosition[] {
  const value = JSON.parse(new TextDecoder().decode(data)) as Partial<ReadingsPublished> | null;
  if (!Array.isArray(value?.devices)) throw new Error('not a readings publication');
  const positions: LastPosition[] = [];
  for (const group of value.devices) {
    const { deviceId, shipmentId, readings } = group ?? {};
    if (typeof deviceId !== 'string' || !isUuid(deviceId) || !Array.isArray(readings)) throw new Error('not a readings publication');
    if (shipmentId === null) continue;
    if (typeof shipmentId !== 'string' || !isUuid(shipmentId)) throw new Error('not a readings publication');
    for (const reading of readings) {
      const location = reading?.location;
      const recordedAt = Date.parse(reading?.recordedAt);
      if (!location || typeof location.lat !== 'number' || typeof location.lng !== 'number' || Number.isNaN(recordedAt)) continue;
      positions.push({ shipmentId, deviceId, lat: location.lat, lng: location.lng, accuracyMeters: location.accuracyMeters ?? null, recordedAt });
    }
  }
  return positions;
}
