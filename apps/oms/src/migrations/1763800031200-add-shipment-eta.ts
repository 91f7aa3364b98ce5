import type { MigrationInterface, QueryRunner } from 'typeorm';
import { shipmentJsonFunction } from './shipment-json.js';

/**
 * A shipment's estimated arrival (docs/eta.md): the newest estimate the evaluation made, for the destination
 * it was made for, and the arrival last published in `shipment.eta_changed`; `eta_effective_arrival_at`,
 * what the API shows as `eta.arrivalAt` (the estimate, else the plan), for the filters `arrivingBefore`,
 * `arrivingAfter` and `late`. The lanes' statistics: per account, origin and destination, running sums of
 * the completed trips' figures, and the trips taken in (one row per shipment, so a trip counts once).
 */
export class AddShipmentEta1763800031200 implements MigrationInterface {
  name = 'AddShipmentEta1763800031200';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE shipments
        ADD COLUMN eta_arrival_at timestamptz,
        ADD COLUMN eta_earliest_at timestamptz,
        ADD COLUMN eta_latest_at timestamptz,
        ADD COLUMN eta_remaining_meters float8,
        ADD COLUMN eta_basis text,
        ADD COLUMN eta_as_of timestamptz,
        ADD COLUMN eta_calculated_at timestamptz,
        ADD COLUMN eta_destination_id uuid,
        ADD COLUMN eta_published_arrival_at timestamptz,
        ADD CONSTRAINT shipments_eta_check CHECK (
          eta_arrival_at IS NULL OR (eta_earliest_at <= eta_arrival_at AND eta_arrival_at <= eta_latest_at
            AND eta_basis IN ('Position', 'History') AND eta_destination_id IS NOT NULL AND eta_calculated_at IS NOT NULL)),
        ADD COLUMN eta_effective_arrival_at timestamptz GENERATED ALWAYS AS (
          CASE WHEN status IN ('Planned', 'InTransit') AND destination_id IS NOT NULL THEN
            CASE WHEN eta_arrival_at IS NOT NULL AND eta_destination_id = destination_id THEN eta_arrival_at ELSE planned_arrival_at END
          END) STORED`);
    // Only the shipments that have an estimate are indexed (those delivered or without destination have none).
    await queryRunner.query(`
      CREATE INDEX shipments_account_eta_idx ON shipments (tenant_id, account_id, eta_effective_arrival_at)
        WHERE eta_effective_arrival_at IS NOT NULL`);
    await queryRunner.query(shipmentJsonFunction('AddShipmentEta'));
    await queryRunner.query('UPDATE shipments SET api_json = NULL');
    await queryRunner.query(`
      CREATE TABLE eta_lanes (
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        origin_id uuid NOT NULL,
        destination_id uuid NOT NULL,
        trips integer NOT NULL,
        detour_sum float8 NOT NULL,
        detour_squares float8 NOT NULL,
        speed_sum float8 NOT NULL,
        speed_squares float8 NOT NULL,
        stop_ratio_sum float8 NOT NULL,
        stop_ratio_squares float8 NOT NULL,
        pace_sum float8 NOT NULL,
        pace_squares float8 NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, account_id, origin_id, destination_id))`);
    await queryRunner.query(`
      CREATE TABLE eta_lane_trips (
        shipment_id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        origin_id uuid NOT NULL,
        destination_id uuid NOT NULL,
        detour float8 NOT NULL,
        speed float8 NOT NULL,
        stop_ratio float8 NOT NULL,
        pace float8 NOT NULL,
        departed_at timestamptz NOT NULL,
        delivered_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE eta_lane_trips');
    await queryRunner.query('DROP TABLE eta_lanes');
    await queryRunner.query(shipmentJsonFunction('AddShipmentLastPosition'));
    await queryRunner.query('DROP INDEX shipments_account_eta_idx');
    await queryRunner.query(`
      ALTER TABLE shipments
        DROP COLUMN eta_effective_arrival_at,
        DROP CONSTRAINT shipments_eta_check,
        DROP COLUMN eta_published_arrival_at,
        DROP COLUMN eta_destination_id,
        DROP COLUMN eta_calculated_at,
        DROP COLUMN eta_as_of,
        DROP COLUMN eta_basis,
        DROP COLUMN eta_remaining_meters,
        DROP COLUMN eta_latest_at,
        DROP COLUMN eta_earliest_at,
        DROP COLUMN eta_arrival_at`);
    await queryRunner.query('UPDATE shipments SET api_json = NULL');
  }
}
