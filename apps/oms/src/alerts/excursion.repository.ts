import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

/** A measure whose excursions a shipment totals. */
export type ExcursionMeasure = 'temperature' | 'humidity';

/** Every statement on the `shipment_excursions` table: the excursions a shipment's totals add up. */
@Injectable()
export class ExcursionRepository {
  /**
   * Records the excursion in the caller's transaction unless it is recorded (same shipment, measure,
   * device and start); returns whether it recorded it, that is whether it still has to count.
   */
  async insert(
    manager: EntityManager,
    excursion: { shipmentId: string; deviceId: string | null; measure: ExcursionMeasure; startedAt: Date; endedAt: Date },
  ): Promise<boolean> {
    const rows = (await manager.query(
      `INSERT INTO shipment_excursions (shipment_id, device_id, measure, started_at, ended_at)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT DO NOTHING
       RETURNING shipment_id`,
      [excursion.shipmentId, excursion.deviceId, excursion.measure, excursion.startedAt, excursion.endedAt],
    )) as unknown[];
    return rows.length === 1;
  }
}
