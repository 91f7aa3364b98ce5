import type { ReadingsPublished } from '@tracking/contracts';
import type { LastPosition } from '../shipments/shipment.repository.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The located readings of one message of the readings stream, as candidate positions of the shipment the
 * device was on when it recorded them; none when it was on none. A message that is not a readings
 * publication throws (the consumer terminates it and logs it).
 */
export function decodePositions(data: Uint8Array): LastPosition[] {
  const value = JSON.parse(new TextDecoder().decode(data)) as Partial<ReadingsPublished> | null;
  if (typeof value?.deviceId !== 'string' || !UUID.test(value.deviceId) || !Array.isArray(value.readings)) {
    throw new Error('not a readings publication');
  }
  const { deviceId, shipmentId } = value;
  if (shipmentId === null || shipmentId === undefined) return [];
  if (typeof shipmentId !== 'string' || !UUID.test(shipmentId)) throw new Error('not a readings publication');
  const positions: LastPosition[] = [];
  for (const reading of value.readings) {
    const location = reading?.location;
    const recordedAt = Date.parse(reading?.recordedAt);
    if (!location || typeof location.lat !== 'number' || typeof location.lng !== 'number' || Number.isNaN(recordedAt)) continue;
    positions.push({ shipmentId, deviceId, lat: location.lat, lng: location.lng, accuracyMeters: location.accuracyMeters ?? null, recordedAt });
  }
  return positions;
}
