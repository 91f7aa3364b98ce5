import { Injectable } from '@nestjs/common';
import type { AccountScope } from '@tracking/contracts';
import type { LaneStats, LaneTrip } from '@tracking/geofence';
import type { EntityManager } from 'typeorm';

/** A lane: an account's trips from one point of interest to another (docs/eta.md, "Lanes"). */
export interface LaneKey extends AccountScope {
  originId: string;
  destinationId: string;
}

interface LaneRow {
  trips: number;
  detour_sum: number;
  detour_squares: number;
  speed_sum: number;
  speed_squares: number;
  stop_ratio_sum: number;
  stop_ratio_squares: number;
  pace_sum: number;
  pace_squares: number;
}

/**
 * The lanes' running statistics (`eta_lanes`, `eta_lane_trips`). A shipment's own estimate is a statement
 * on `shipments` and lives with the others in `ShipmentRepository.saveEstimates`.
 */
@Injectable()
export class EtaRepository {
  /** The lane's statistics; null when it has no completed trip. */
  async lane(manager: EntityManager, key: LaneKey): Promise<LaneStats | null> {
    const rows: LaneRow[] = await manager.query(
      `SELECT trips, detour_sum, detour_squares, speed_sum, speed_squares, stop_ratio_sum, stop_ratio_squares, pace_sum, pace_squares
         FROM eta_lanes WHERE tenant_id = $1 AND account_id = $2 AND origin_id = $3 AND destination_id = $4`,
      [key.tenantId, key.accountId, key.originId, key.destinationId],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      n: row.trips,
      detour: [row.detour_sum, row.detour_squares],
      speed: [row.speed_sum, row.speed_squares],
      stopRatio: [row.stop_ratio_sum, row.stop_ratio_squares],
      pace: [row.pace_sum, row.pace_squares],
    };
  }

  /**
   * Adds a delivered shipment's trip to its lane's sums, once (a trip already taken in adds nothing): one
   * statement, whose upsert serialises concurrent trips of the same lane on its row. Returns whether it added.
   */
  async addTrip(manager: EntityManager, key: LaneKey, shipmentId: string, trip: LaneTrip, departedAt: Date, deliveredAt: Date): Promise<boolean> {
    const rows: unknown[] = await manager.query(
      `WITH trip AS (
         INSERT INTO eta_lane_trips (shipment_id, tenant_id, account_id, origin_id, destination_id, detour, speed, stop_ratio, pace, departed_at, delivered_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now())
         ON CONFLICT (shipment_id) DO NOTHING
         RETURNING tenant_id, account_id, origin_id, destination_id, detour, speed, stop_ratio, pace)
       INSERT INTO eta_lanes AS l (tenant_id, account_id, origin_id, destination_id, trips, detour_sum, detour_squares, speed_sum, speed_squares,
           stop_ratio_sum, stop_ratio_squares, pace_sum, pace_squares, updated_at)
       SELECT tenant_id, account_id, origin_id, destination_id, 1, detour, detour * detour, speed, speed * speed,
           stop_ratio, stop_ratio * stop_ratio, pace, pace * pace, now()
         FROM trip
       ON CONFLICT (tenant_id, account_id, origin_id, destination_id) DO UPDATE SET
         trips = l.trips + 1,
         detour_sum = l.detour_sum + EXCLUDED.detour_sum, detour_squares = l.detour_squares + EXCLUDED.detour_squares,
         speed_sum = l.speed_sum + EXCLUDED.speed_sum, speed_squares = l.speed_squares + EXCLUDED.speed_squares,
         stop_ratio_sum = l.stop_ratio_sum + EXCLUDED.stop_ratio_sum, stop_ratio_squares = l.stop_ratio_squares + EXCLUDED.stop_ratio_squares,
         pace_sum = l.pace_sum + EXCLUDED.pace_sum, pace_squares = l.pace_squares + EXCLUDED.pace_squares,
         updated_at = now()
       RETURNING 1`,
      [shipmentId, key.tenantId, key.accountId, key.originId, key.destinationId, trip.detour, trip.speed, trip.stopRatio, trip.pace, departedAt, deliveredAt],
    );
    return rows.length > 0;
  }
}
