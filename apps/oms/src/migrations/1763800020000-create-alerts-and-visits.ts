import type { MigrationInterface, QueryRunner } from 'typeorm';
import { shipmentJsonFunction } from './shipment-json.js';

/**
 * What the evaluation of readings produces and clients read (docs/alerts-and-visits.md): a place's
 * `dwellSeconds`; a shipment's `autoTransitions`, `conditions` and `excursions` totals (with the
 * excursions they add up, each recorded once); alerts, at most one open per (shipment, device, kind);
 * visits, each recorded once.
 */
export class CreateAlertsAndVisits1763800020000 implements MigrationInterface {
  name = 'CreateAlertsAndVisits1763800020000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE points_of_interest
        ADD COLUMN dwell_seconds integer NOT NULL DEFAULT 120,
        ADD CONSTRAINT points_of_interest_dwell_check CHECK (dwell_seconds BETWEEN 0 AND 86400)`);

    await queryRunner.query(`
      ALTER TABLE shipments
        ADD COLUMN auto_transitions boolean NOT NULL DEFAULT false,
        ADD COLUMN conditions jsonb,
        ADD COLUMN excursion_temperature_ms bigint NOT NULL DEFAULT 0,
        ADD COLUMN excursion_humidity_ms bigint NOT NULL DEFAULT 0,
        ADD CONSTRAINT shipments_conditions_check CHECK (jsonb_typeof(conditions) = 'object'),
        ADD CONSTRAINT shipments_excursions_check CHECK (excursion_temperature_ms >= 0 AND excursion_humidity_ms >= 0)`);
    await queryRunner.query(shipmentJsonFunction('CreateAlertsAndVisits'));
    // Rewrites every row's text through the trigger.
    await queryRunner.query('UPDATE shipments SET api_json = NULL');

    // Each excursion once: the evaluation may record the same one again (a replay after a crash), and only
    // the first adds to the shipment's total. Gone with the shipment.
    await queryRunner.query(`
      CREATE TABLE shipment_excursions (
        shipment_id uuid NOT NULL REFERENCES shipments (id) ON DELETE CASCADE,
        device_id uuid,
        measure text NOT NULL,
        started_at timestamptz NOT NULL,
        ended_at timestamptz NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT shipment_excursions_measure_check CHECK (measure IN ('temperature', 'humidity')),
        CONSTRAINT shipment_excursions_period_check CHECK (ended_at >= started_at)
      )`);
    await queryRunner.query(
      'CREATE UNIQUE INDEX shipment_excursions_key ON shipment_excursions (shipment_id, measure, device_id, started_at) NULLS NOT DISTINCT',
    );

    // Alerts outlive their shipment (no foreign key): a deleted shipment's alerts, closed when it was
    // deleted, stay in GET /alerts as the record of what happened.
    await queryRunner.query(`
      CREATE TABLE alerts (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        shipment_id uuid NOT NULL,
        device_id uuid,
        kind text NOT NULL,
        status text NOT NULL,
        started_at timestamptz NOT NULL,
        ended_at timestamptz,
        threshold double precision NOT NULL,
        peak_value double precision,
        acknowledged_at timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT alerts_kind_check CHECK (kind IN
          ('TemperatureHigh', 'TemperatureLow', 'HumidityHigh', 'HumidityLow', 'Shock', 'Light', 'BatteryLow', 'SignalLoss')),
        CONSTRAINT alerts_status_check CHECK (status IN ('Open', 'Closed')),
        CONSTRAINT alerts_ended_check CHECK ((status = 'Open') = (ended_at IS NULL)),
        CONSTRAINT alerts_period_check CHECK (ended_at >= started_at)
      )`);
    // The rule of the API, kept by the database whichever replica decides: at most one open alert per
    // shipment, device and kind (a shipment-wide alert, SignalLoss, has no device: NULLS NOT DISTINCT).
    await queryRunner.query(
      `CREATE UNIQUE INDEX alerts_one_open_idx ON alerts (shipment_id, device_id, kind) NULLS NOT DISTINCT WHERE status = 'Open'`,
    );
    // One alert per excursion: the same decision made again (a replay) finds the alert it made.
    await queryRunner.query('CREATE UNIQUE INDEX alerts_excursion_key ON alerts (shipment_id, device_id, kind, started_at) NULLS NOT DISTINCT');
    await queryRunner.query('CREATE UNIQUE INDEX alerts_account_seq_idx ON alerts (tenant_id, account_id, seq)');
    await queryRunner.query('CREATE INDEX alerts_account_status_seq_idx ON alerts (tenant_id, account_id, status, seq)');
    await queryRunner.query('CREATE INDEX alerts_account_shipment_seq_idx ON alerts (tenant_id, account_id, shipment_id, seq)');
    await queryRunner.query('CREATE INDEX alerts_account_device_seq_idx ON alerts (tenant_id, account_id, device_id, seq) WHERE device_id IS NOT NULL');

    // A visit names its place by id only (no foreign key): the record stays when the place is deleted.
    await queryRunner.query(`
      CREATE TABLE visits (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        shipment_id uuid NOT NULL REFERENCES shipments (id) ON DELETE CASCADE,
        poi_id uuid NOT NULL,
        arrived_at timestamptz NOT NULL,
        departed_at timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT visits_period_check CHECK (departed_at >= arrived_at)
      )`);
    // One visit per arrival: the same arrival recorded again (a replay) is found, not repeated.
    await queryRunner.query('CREATE UNIQUE INDEX visits_arrival_key ON visits (shipment_id, poi_id, arrived_at)');
    await queryRunner.query('CREATE UNIQUE INDEX visits_shipment_seq_idx ON visits (shipment_id, seq)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE visits');
    await queryRunner.query('DROP TABLE alerts');
    await queryRunner.query('DROP TABLE shipment_excursions');
    await queryRunner.query(shipmentJsonFunction(undefined));
    await queryRunner.query(`
      ALTER TABLE shipments
        DROP CONSTRAINT shipments_excursions_check,
        DROP CONSTRAINT shipments_conditions_check,
        DROP COLUMN excursion_humidity_ms,
        DROP COLUMN excursion_temperature_ms,
        DROP COLUMN conditions,
        DROP COLUMN auto_transitions`);
    await queryRunner.query('UPDATE shipments SET api_json = NULL');
    await queryRunner.query('ALTER TABLE points_of_interest DROP CONSTRAINT points_of_interest_dwell_check, DROP COLUMN dwell_seconds');
  }
}
