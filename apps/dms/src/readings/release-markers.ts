import { type AccountScope, ReadingSubjects } from '@tracking/contracts';
import { readingsPartitionOf, writeOutbox } from '@tracking/outbox';
import type { EntityManager } from 'typeorm';
import { uuidV7s } from './uuid-v7.js';

/** Release markers per message at most (some 150 bytes each: far under the 512 KiB of a readings message). */
const MARKERS_PER_MESSAGE = 1000;

/**
 * Writes a release marker on the readings stream for every assignment period of these devices that this
 * transaction ended (`released_at = now()`, set by the devices' trigger), through the outbox the readings
 * use: a group with no readings and `releasedAt` (docs/geofence-evaluation.md, "Releases"). Published in
 * order with the device's readings, so the evaluation folds it at its time in the device's stream.
 * `releasedAt` is rounded up to the millisecond, so that a reading the period holds (recorded before the
 * release) is never at or after it.
 */
export async function writeReleaseMarkers(manager: EntityManager, scope: AccountScope, deviceIds: readonly string[], partitionCount: number): Promise<void> {
  if (deviceIds.length === 0) return;
  const rows: { device_id: string; shipment_id: string; released_ms: string }[] = await manager.query(
    `SELECT device_id, shipment_id, ceil(extract(epoch FROM released_at) * 1000)::bigint AS released_ms
       FROM assignment_periods
      WHERE device_id = ANY($1::uuid[]) AND released_at = now()
      ORDER BY device_id`,
    [deviceIds],
  );
  if (rows.length === 0) return;
  const receivedAt = new Date().toISOString();
  // On the partition of each marker's shipment, as the device's readings are (so it follows them).
  const byPartition = new Map<number, typeof rows>();
  for (const row of rows) {
    const partition = readingsPartitionOf(row.shipment_id, partitionCount);
    const list = byPartition.get(partition);
    if (list) list.push(row);
    else byPartition.set(partition, [row]);
  }
  const messages: { subject: string; payload: string }[] = [];
  for (const [partition, list] of byPartition) {
    const subject = ReadingSubjects.of('', scope.tenantId, scope.accountId, partition);
    for (let i = 0; i < list.length; i += MARKERS_PER_MESSAGE) {
      const devices = list.slice(i, i + MARKERS_PER_MESSAGE).map((row) => ({
        deviceId: row.device_id,
        shipmentId: row.shipment_id,
        readings: [],
        releasedAt: new Date(Number(row.released_ms)).toISOString(),
      }));
      messages.push({ subject, payload: JSON.stringify({ tenantId: scope.tenantId, accountId: scope.accountId, receivedAt, devices }) });
    }
  }
  const ids = uuidV7s(messages.length);
  await writeOutbox(
    manager,
    messages.map((message, index) => ({ id: ids[index] ?? '', ...message })),
  );
}
