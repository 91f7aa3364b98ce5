import type { MigrationInterface, QueryRunner } from 'typeorm';
import { shipmentJsonFunction } from './shipment-json.js';

/**
 * A shipment's `lastPosition`: the newest located reading its devices recorded while assigned to it, kept
 * from the readings stream (docs/readings.md, "Last known positions"); in the stored JSON too.
 */
export class AddShipmentLastPosition1763800021000 implements MigrationInterface {
  name = 'AddShipmentLastPosition1763800021000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE shipments
        ADD COLUMN last_position_lat float8,
        ADD COLUMN last_position_lng float8,
        ADD COLUMN last_position_accuracy_meters float8,
        ADD COLUMN last_position_recorded_at timestamptz,
        ADD COLUMN last_position_device_id uuid,
        ADD CONSTRAINT shipments_last_position_check CHECK (
          (last_position_recorded_at IS NULL) = (last_position_lat IS NULL)
          AND (last_position_recorded_at IS NULL) = (last_position_lng IS NULL)
          AND (last_position_recorded_at IS NULL) = (last_position_device_id IS NULL))`);
    await queryRunner.query(shipmentJsonFunction('AddShipmentLastPosition'));
    // Rewrites every row's text through the trigger.
    await queryRunner.query('UPDATE shipments SET api_json = NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(shipmentJsonFunction('CreateAlertsAndVisits'));
    await queryRunner.query(`
      ALTER TABLE shipments
        DROP CONSTRAINT shipments_last_position_check,
        DROP COLUMN last_position_device_id,
        DROP COLUMN last_position_recorded_at,
        DROP COLUMN last_position_accuracy_meters,
        DROP COLUMN last_position_lng,
        DROP COLUMN last_position_lat`);
    await queryRunner.query('UPDATE shipments SET api_json = NULL');
  }
}
