import type { MigrationInterface, QueryRunner } from 'typeorm';

const MEASUREMENTS = [
  'accuracy_meters',
  'altitude_meters',
  'speed_mps',
  'heading_degrees',
  'temperature_c',
  'humidity_percent',
  'shock_g',
  'light_lux',
  'battery_percent',
  'pressure_hpa',
];

/**
 * What trackers measure (docs/readings.md). `readings` is range-partitioned by `recorded_at` (the device's
 * clock): the DMS creates one partition per UTC day ahead of time and drops whole partitions past the
 * retention, never deleting rows. The migration creates only the parent; the partitions are the service's.
 *
 * - The primary key `(device_id, recorded_at)` is the idempotency key of ingest (`ON CONFLICT DO NOTHING`)
 *   and, being partitioned by `recorded_at`, allowed on a partitioned table; it also serves a device's
 *   positions by event time (a shipment's track).
 * - `seq` is the order readings were stored in, taken from `readings_seq` while the ingesting transaction
 *   holds each of its devices' insert-order locks, so that within a device it is commit order: the
 *   readings page (`readings_device_seq_idx`) neither skips nor repeats rows written while a client pages.
 * - Every measurement is nullable; a location is `lat` and `lng` together. The checks repeat the API's
 *   bounds so that no other writer stores what the API refuses (and no NaN, which JSON cannot write).
 *
 * The device row gains the event time of each last known field (`last_location_recorded_at`,
 * `battery_level_recorded_at`; `last_seen_at` is its own), so that a late, older reading never moves
 * them back, and its API text (`api_json`) writes `lastLocation {lat, lng, accuracyMeters, recordedAt}`.
 */
export class CreateReadings1763800011000 implements MigrationInterface {
  name = 'CreateReadings1763800011000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('CREATE SEQUENCE readings_seq AS bigint');
    await queryRunner.query(`
      CREATE TABLE readings (
        id uuid NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        device_id uuid NOT NULL,
        recorded_at timestamptz NOT NULL,
        received_at timestamptz NOT NULL,
        seq bigint NOT NULL DEFAULT nextval('readings_seq'),
        lat double precision,
        lng double precision,
        ${MEASUREMENTS.map((column) => `${column} double precision`).join(',\n        ')},
        CONSTRAINT readings_pkey PRIMARY KEY (device_id, recorded_at),
        CONSTRAINT readings_location_check CHECK ((lat IS NULL) = (lng IS NULL)
          AND lat BETWEEN -90 AND 90 AND lng BETWEEN -180 AND 180),
        CONSTRAINT readings_position_check CHECK (lat IS NOT NULL OR (accuracy_meters IS NULL
          AND altitude_meters IS NULL AND speed_mps IS NULL AND heading_degrees IS NULL)),
        CONSTRAINT readings_bounds_check CHECK (
          accuracy_meters BETWEEN 0 AND 100000 AND temperature_c BETWEEN -100 AND 150
          AND humidity_percent BETWEEN 0 AND 100 AND shock_g BETWEEN 0 AND 1000 AND light_lux BETWEEN 0 AND 200000
          AND battery_percent BETWEEN 0 AND 100 AND pressure_hpa BETWEEN 300 AND 1200
          AND altitude_meters BETWEEN -20000 AND 100000 AND speed_mps BETWEEN 0 AND 10000
          AND heading_degrees BETWEEN 0 AND 360)
      ) PARTITION BY RANGE (recorded_at)`);
    await queryRunner.query('ALTER SEQUENCE readings_seq OWNED BY readings.seq');
    await queryRunner.query('CREATE INDEX readings_device_seq_idx ON readings (device_id, seq)');

    await queryRunner.query(`
      ALTER TABLE devices
        ADD COLUMN last_location_accuracy_meters double precision,
        ADD COLUMN last_location_recorded_at timestamptz,
        ADD COLUMN battery_level_recorded_at timestamptz`);
    // Values set before readings existed (by a client) count as known since the device's last update.
    await queryRunner.query(`
      UPDATE devices SET
        last_location_recorded_at = CASE WHEN last_location_lat IS NOT NULL THEN updated_at END,
        battery_level_recorded_at = CASE WHEN battery_level IS NOT NULL THEN updated_at END`);
    await queryRunner.query(`
      ALTER TABLE devices
        ADD CONSTRAINT devices_last_location_known_check CHECK (
          (last_location_lat IS NULL) = (last_location_recorded_at IS NULL)
          AND (last_location_lat IS NOT NULL OR last_location_accuracy_meters IS NULL)
          AND last_location_accuracy_meters BETWEEN 0 AND 100000),
        ADD CONSTRAINT devices_battery_level_known_check CHECK ((battery_level IS NULL) = (battery_level_recorded_at IS NULL))`);
    await replaceApiJson(queryRunner, true);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE readings');
    await queryRunner.query(`
      ALTER TABLE devices
        DROP CONSTRAINT devices_last_location_known_check,
        DROP CONSTRAINT devices_battery_level_known_check,
        DROP COLUMN last_location_accuracy_meters,
        DROP COLUMN last_location_recorded_at,
        DROP COLUMN battery_level_recorded_at`);
    await replaceApiJson(queryRunner, false);
  }
}

/** `devices_api_json()` as migration 1763800008000 wrote it, with (or without) the fuller `lastLocation`. */
async function replaceApiJson(queryRunner: QueryRunner, fullLocation: boolean): Promise<void> {
  const location = fullLocation
    ? `'{"lat":' || api_json_number(NEW.last_location_lat) || ',"lng":' || api_json_number(NEW.last_location_lng) ||
              ',"accuracyMeters":' || api_json_number(NEW.last_location_accuracy_meters) ||
              ',"recordedAt":' || api_json_date_time(NEW.last_location_recorded_at) || '}'`
    : `'{"lat":' || api_json_number(NEW.last_location_lat) || ',"lng":' || api_json_number(NEW.last_location_lng) || '}'`;
  await queryRunner.query(`
    CREATE OR REPLACE FUNCTION devices_api_json() RETURNS trigger LANGUAGE plpgsql SET extra_float_digits = 1 AS $$
    BEGIN
      NEW.api_json :=
        '{"id":"' || NEW.id || '","serialNumber":' || api_json_string(NEW.serial_number) ||
        ',"model":' || api_json_string(NEW.model) || ',"status":' || api_json_string(NEW.status) ||
        ',"shipmentId":' || api_json_string(NEW.shipment_id::text) || ',"setId":' || api_json_string(NEW.set_id::text) ||
        ',"firmwareVersion":' || api_json_string(NEW.firmware_version) ||
        ',"batteryLevel":' || api_json_number(NEW.battery_level) ||
        ',"lastSeenAt":' || api_json_date_time(NEW.last_seen_at) ||
        ',"lastLocation":' || CASE
          WHEN NEW.last_location_lat IS NULL OR NEW.last_location_lng IS NULL THEN 'null'
          ELSE ${location}
        END ||
        ',"metadata":' || NEW.metadata::text ||
        ',"createdAt":' || api_json_date_time(NEW.created_at) ||
        ',"updatedAt":' || api_json_date_time(NEW.updated_at) ||
        ',"retiredAt":' || api_json_date_time(NEW.retired_at) || '}';
      RETURN NEW;
    END
    $$`);
  // Rewrites every row's text through the trigger (a trigger-only UPDATE: updated_at and version stay).
  await queryRunner.query('UPDATE devices SET api_json = NULL');
}
