import { createHash } from 'node:crypto';

/**
 * The partition of a shipment's readings on the readings stream: the first 32 bits of the MD5 of its id
 * (lower case, as PostgreSQL prints a uuid) modulo the number of partitions. The same function is written
 * in SQL by `partitionSql`, so that the evaluation's timers find the shipments of the partitions a worker
 * holds. Stable: it depends only on the id and `READINGS_PARTITIONS`, which is fixed for a deployment.
 */
export function readingsPartitionOf(shipmentId: string, partitions: number): number {
  return createHash('md5').update(shipmentId.toLowerCase()).digest().readUInt32BE(0) % partitions;
}

/** `readingsPartitionOf` in SQL, of a uuid column (`$partitions` being a parameter or a number). */
export function partitionSql(column: string, partitions: string): string {
  return `(('x' || substr(md5(${column}::text), 1, 8))::bit(32)::bigint % ${partitions})`;
}
