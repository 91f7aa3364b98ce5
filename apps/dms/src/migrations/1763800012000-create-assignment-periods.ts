import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every link of a device to a shipment, kept as a period `[assigned_at, released_at)` (docs/tracks.md),
 * so that a shipment's track holds exactly the positions its devices recorded while assigned to it, even
 * after they moved on.
 *
 * The periods are written by a trigger on `devices`, in the transaction that changes the link, whoever
 * changes it: a single assign or unassign, the release of a closed or deleted shipment or of a deleted
 * set, a bulk assignment chunk. A trigger rather than a statement beside each of those writers, so that
 * a new writer of `shipment_id` cannot forget the period.
 *
 * - Linking (shipment_id from null to a shipment) opens a period at the transaction's time (`now()`).
 * - Unlinking closes the device's open period at the same clock.
 * - Moving to another set of the same shipment keeps the one period and records the new set: a track
 *   is per shipment, and a period per set would only split it.
 * - A change straight from one shipment to another (no path does it today) closes one and opens the other.
 *
 * `assigned_at` and `released_at` are server time, matched against readings' `recorded_at` (device time).
 * Periods have no foreign key to `devices`: a shipment's history stays when a device is deleted later.
 * Current links are backfilled with their device's `updated_at` as `assigned_at` (the best the row knows).
 */
export class CreateAssignmentPeriods1763800012000 implements MigrationInterface {
  name = 'CreateAssignmentPeriods1763800012000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE assignment_periods (
        id bigserial PRIMARY KEY,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        device_id uuid NOT NULL,
        shipment_id uuid NOT NULL,
        set_id uuid NOT NULL,
        assigned_at timestamptz NOT NULL,
        released_at timestamptz,
        CONSTRAINT assignment_periods_order_check CHECK (released_at IS NULL OR released_at >= assigned_at)
      )`);
    // The periods of a shipment (a track), and the period of a device at an instant (its current one, or
    // the one whose start is the latest at or before t).
    await queryRunner.query('CREATE INDEX assignment_periods_shipment_idx ON assignment_periods (shipment_id, device_id, assigned_at)');
    await queryRunner.query('CREATE INDEX assignment_periods_device_idx ON assignment_periods (device_id, assigned_at)');
    await queryRunner.query('CREATE UNIQUE INDEX assignment_periods_open_key ON assignment_periods (device_id) WHERE released_at IS NULL');
    await queryRunner.query(`
      INSERT INTO assignment_periods (tenant_id, account_id, device_id, shipment_id, set_id, assigned_at)
      SELECT tenant_id, account_id, id, shipment_id, set_id, updated_at FROM devices WHERE shipment_id IS NOT NULL`);
    await queryRunner.query(`
      CREATE FUNCTION devices_assignment_periods() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'UPDATE' AND OLD.shipment_id IS NOT NULL AND OLD.shipment_id IS NOT DISTINCT FROM NEW.shipment_id THEN
          UPDATE assignment_periods SET set_id = NEW.set_id WHERE device_id = NEW.id AND released_at IS NULL;
          RETURN NULL;
        END IF;
        IF TG_OP = 'UPDATE' AND OLD.shipment_id IS NOT NULL THEN
          UPDATE assignment_periods SET released_at = now() WHERE device_id = NEW.id AND released_at IS NULL;
        END IF;
        IF NEW.shipment_id IS NOT NULL THEN
          INSERT INTO assignment_periods (tenant_id, account_id, device_id, shipment_id, set_id, assigned_at)
          VALUES (NEW.tenant_id, NEW.account_id, NEW.id, NEW.shipment_id, NEW.set_id, now());
        END IF;
        RETURN NULL;
      END
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER devices_assignment_periods_insert AFTER INSERT ON devices
        FOR EACH ROW WHEN (NEW.shipment_id IS NOT NULL) EXECUTE FUNCTION devices_assignment_periods()`);
    await queryRunner.query(`
      CREATE TRIGGER devices_assignment_periods_update AFTER UPDATE OF shipment_id, set_id ON devices
        FOR EACH ROW WHEN (OLD.shipment_id IS DISTINCT FROM NEW.shipment_id OR OLD.set_id IS DISTINCT FROM NEW.set_id)
        EXECUTE FUNCTION devices_assignment_periods()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER devices_assignment_periods_update ON devices');
    await queryRunner.query('DROP TRIGGER devices_assignment_periods_insert ON devices');
    await queryRunner.query('DROP FUNCTION devices_assignment_periods()');
    await queryRunner.query('DROP TABLE assignment_periods');
  }
}
