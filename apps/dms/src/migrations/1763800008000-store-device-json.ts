import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each device keeps its API representation as JSON text in `api_json`, written by a trigger on every
 * insert and update (assignments, bulk operations and any other writer included). The device list
 * selects one text column per row instead of formatting 15, and the DMS strings the rows together
 * without decoding them. Speed machinery (docs/architecture.md, "Speed machinery"): the simple version
 * reads the entities and maps them with `toDevice`, as get device still does.
 *
 * The text is the JSON of `toDevice`: the same fields in the same order, date-times as RFC 3339 UTC with
 * milliseconds, numbers in the shortest form that reads back as the same double (the function pins
 * `extra_float_digits` to PostgreSQL's default for that; 0 is written `0`, never `-0`), compact except
 * for `metadata` (PostgreSQL's jsonb text). A change of the representation is a new migration that
 * replaces `devices_api_json()` and rewrites the column.
 */
export class StoreDeviceJson1763800008000 implements MigrationInterface {
  name = 'StoreDeviceJson1763800008000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION api_json_date_time(value timestamptz) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN coalesce('"' || to_char(value AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null')`);
    await queryRunner.query(`
      CREATE FUNCTION api_json_string(value text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN coalesce(to_json(value)::text, 'null')`);
    // The checks on the columns keep NaN and the infinities out, which JSON cannot write.
    await queryRunner.query(`
      CREATE FUNCTION api_json_number(value double precision) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN CASE WHEN value IS NULL THEN 'null' WHEN value = 0 THEN '0' ELSE value::text END`);
    await queryRunner.query(`
      CREATE FUNCTION devices_api_json() RETURNS trigger LANGUAGE plpgsql SET extra_float_digits = 1 AS $$
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
            ELSE '{"lat":' || api_json_number(NEW.last_location_lat) || ',"lng":' || api_json_number(NEW.last_location_lng) || '}'
          END ||
          ',"metadata":' || NEW.metadata::text ||
          ',"createdAt":' || api_json_date_time(NEW.created_at) ||
          ',"updatedAt":' || api_json_date_time(NEW.updated_at) ||
          ',"retiredAt":' || api_json_date_time(NEW.retired_at) || '}';
        RETURN NEW;
      END
      $$`);
    await queryRunner.query('ALTER TABLE devices ADD COLUMN api_json text');
    await queryRunner.query(
      'CREATE TRIGGER devices_api_json BEFORE INSERT OR UPDATE ON devices FOR EACH ROW EXECUTE FUNCTION devices_api_json()',
    );
    // Rewrites every row once, through the trigger; then no row can be without its text.
    await queryRunner.query('UPDATE devices SET api_json = NULL');
    await queryRunner.query('ALTER TABLE devices ALTER COLUMN api_json SET NOT NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER devices_api_json ON devices');
    await queryRunner.query('ALTER TABLE devices DROP COLUMN api_json');
    await queryRunner.query('DROP FUNCTION devices_api_json()');
    await queryRunner.query('DROP FUNCTION api_json_number(double precision)');
    await queryRunner.query('DROP FUNCTION api_json_string(text)');
    await queryRunner.query('DROP FUNCTION api_json_date_time(timestamptz)');
  }
}
