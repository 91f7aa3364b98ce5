import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each shipment keeps its API representation as JSON text in `api_json`, written by a trigger on every
 * insert and update (whoever writes the row, a foreign key's `ON DELETE SET NULL` included). The list
 * and get reads then select one text column per row instead of formatting 19, and the OMS strings the rows
 * together without decoding them. Speed machinery (docs/architecture.md, "Speed machinery"): the simple
 * version reads the entities and maps them with `toShipment` (docs/benchmark-history.md, "The third round").
 *
 * The text is the JSON of `toShipment`: the same fields in the same order, date-times as RFC 3339 UTC
 * with milliseconds, compact except for `metadata` (PostgreSQL's jsonb text). A change of the
 * representation is a new migration that replaces `shipments_api_json()` and rewrites the column.
 */
export class StoreShipmentJson1763800005000 implements MigrationInterface {
  name = 'StoreShipmentJson1763800005000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION api_json_date_time(value timestamptz) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN coalesce('"' || to_char(value AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null')`);
    await queryRunner.query(`
      CREATE FUNCTION api_json_string(value text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN coalesce(to_json(value)::text, 'null')`);
    await queryRunner.query(`
      CREATE FUNCTION shipments_api_json() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.api_json :=
          '{"id":"' || NEW.id || '","name":' || api_json_string(NEW.name) ||
          ',"reference":' || api_json_string(NEW.reference) || ',"status":' || api_json_string(NEW.status) ||
          ',"mode":' || api_json_string(NEW.mode) || ',"carrier":' || api_json_string(NEW.carrier) ||
          ',"originId":' || api_json_string(NEW.origin_id::text) ||
          ',"destinationId":' || api_json_string(NEW.destination_id::text) ||
          ',"plannedDepartureAt":' || api_json_date_time(NEW.planned_departure_at) ||
          ',"plannedArrivalAt":' || api_json_date_time(NEW.planned_arrival_at) ||
          ',"departedAt":' || api_json_date_time(NEW.departed_at) ||
          ',"deliveredAt":' || api_json_date_time(NEW.delivered_at) ||
          ',"completedAt":' || api_json_date_time(NEW.completed_at) ||
          ',"cancelledAt":' || api_json_date_time(NEW.cancelled_at) ||
          ',"tags":' || array_to_json(NEW.tags)::text || ',"metadata":' || NEW.metadata::text ||
          ',"createdAt":' || api_json_date_time(NEW.created_at) ||
          ',"updatedAt":' || api_json_date_time(NEW.updated_at) || '}';
        RETURN NEW;
      END
      $$`);
    await queryRunner.query('ALTER TABLE shipments ADD COLUMN api_json text');
    await queryRunner.query(
      'CREATE TRIGGER shipments_api_json BEFORE INSERT OR UPDATE ON shipments FOR EACH ROW EXECUTE FUNCTION shipments_api_json()',
    );
    // Rewrites every row once, through the trigger; then no row can be without its text.
    await queryRunner.query('UPDATE shipments SET api_json = NULL');
    await queryRunner.query('ALTER TABLE shipments ALTER COLUMN api_json SET NOT NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER shipments_api_json ON shipments');
    await queryRunner.query('ALTER TABLE shipments DROP COLUMN api_json');
    await queryRunner.query('DROP FUNCTION shipments_api_json()');
    await queryRunner.query('DROP FUNCTION api_json_string(text)');
    await queryRunner.query('DROP FUNCTION api_json_date_time(timestamptz)');
  }
}
