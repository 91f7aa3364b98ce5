import type { PublishedDeviceReadings, PublishedReading, ReadingsPublished, ShipmentScope } from '@tracking/contracts';
import type { GeofenceReading } from '@tracking/geofence';
import { validate as isUuid } from 'uuid';
import type { LastPosition } from '../shipments/shipment.repository.js';

/** The readings of one shipment from a message of the readings stream, each with its device. */
export interface ShipmentReadings extends ShipmentScope {
  readings: GeofenceReading[];
}

/**
 * A message of the readings stream as the readings of each shipment (one group per device and shipment),
 * leaving out those recorded while on no shipment (no track, visit or alert). A message that is not a
 * readings publication throws (the consumers terminate it and log it); a reading without its times is
 * left out; a group's `releasedAt` becomes a release marker (`release: true`) after its readings. Each reading gets its group's `deviceId` and its message's `receivedAt`; messages written
 * before `receivedAt` moved to the message carry it on each reading. Absent fields stay absent: the
 * engine reads them as null.
 */
export function decodeShipmentReadings(data: Uint8Array): ShipmentReadings[] {
  const value = JSON.parse(new TextDecoder().decode(data)) as Partial<ReadingsPublished> | null;
  const { tenantId, accountId, devices, receivedAt } = value ?? {};
  if (typeof tenantId !== 'string' || typeof accountId !== 'string' || !Array.isArray(devices)) throw new Error('not a readings publication');
  const groups: ShipmentReadings[] = [];
  for (const group of devices as Partial<PublishedDeviceReadings>[]) {
    const { deviceId, shipmentId, readings } = group ?? {};
    if (typeof deviceId !== 'string' || !isUuid(deviceId) || !Array.isArray(readings)) throw new Error('not a readings publication');
    if (shipmentId === null) continue;
    if (typeof shipmentId !== 'string' || !isUuid(shipmentId)) throw new Error('not a readings publication');
    const timed: GeofenceReading[] = [];
    for (const reading of readings as (PublishedReading | null)[]) {
      const received = reading?.receivedAt ?? receivedAt;
      if (typeof reading?.recordedAt === 'string' && typeof received === 'string') timed.push({ ...reading, deviceId, receivedAt: received });
    }
    // A release marker (the device's assignment period ended), after the group's readings.
    if (typeof group.releasedAt === 'string' && typeof receivedAt === 'string') timed.push({ deviceId, recordedAt: group.releasedAt, receivedAt, release: true });
    groups.push({ tenantId, accountId, shipmentId: shipmentId.toLowerCase(), readings: timed });
  }
  return groups;
}

/** The located readings of a readings message, as candidate positions of the shipment each was recorded on. */
export function decodePositions(data: Uint8Array): LastPosition[] {
  const positions: LastPosition[] = [];
  for (const { shipmentId, readings } of decodeShipmentReadings(data)) {
    for (const { deviceId, location, recordedAt } of readings) {
      const at = Date.parse(recordedAt as string);
      if (!location || typeof location.lat !== 'number' || typeof location.lng !== 'number' || Number.isNaN(at)) continue;
      positions.push({ shipmentId, deviceId, lat: location.lat, lng: location.lng, accuracyMeters: location.accuracyMeters ?? null, recordedAt: at });
    }
  }
  return positions;
}
