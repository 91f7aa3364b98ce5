import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every field of a device (docs/api.md, "Devices"), and the device-to-shipment link for the assignment work.
 *
 * The DMS owns the link: `shipment_id` and `set_id` on the device row, both set or both null, and
 * `status = 'Assigned'` exactly when `shipment_id` is set (devices_assignment_check). Assigning then is
 * one UPDATE of the row locked `FOR UPDATE` (`... SET status = 'Assigned', shipment_id = $1, set_id = $2
 * WHERE id = $3 AND status <> 'Retired'`) after reading its current link: concurrent assignments of one
 * device take turns on the row lock, so exactly one decides and the other sees its result (409
 * DeviceAlreadyAssigned). Releasing is the reverse UPDATE; `GET /shipments/{id}/devices` and the list
 * filter `shipmentId` read devices_account_shipment_idx. The OMS keeps no copy of the link.
 */
export class CompleteDevices1763800004000 implements MigrationInterface {
  name = 'CompleteDevices1763800004000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE devices
        ADD COLUMN shipment_id uuid,
        ADD COLUMN set_id uuid,
        ADD COLUMN battery_level double precision,
        ADD COLUMN last_seen_at timestamptz,
        ADD COLUMN last_location_lat double precision,
        ADD COLUMN last_location_lng double precision`);
    // The checks repeat the API's rules so that no other writer can store what the API refuses.
    await queryRunner.query(`
      ALTER TABLE devices
        ADD CONSTRAINT devices_serial_number_check CHECK (char_length(serial_number) BETWEEN 1 AND 100),
        ADD CONSTRAINT devices_model_check CHECK (char_length(model) BETWEEN 1 AND 100),
        ADD CONSTRAINT devices_firmware_version_check CHECK (char_length(firmware_version) BETWEEN 1 AND 50),
        ADD CONSTRAINT devices_battery_level_check CHECK (battery_level BETWEEN 0 AND 100),
        ADD CONSTRAINT devices_last_location_check CHECK (
          (last_location_lat IS NULL) = (last_location_lng IS NULL)
          AND last_location_lat BETWEEN -90 AND 90 AND last_location_lng BETWEEN -180 AND 180),
        ADD CONSTRAINT devices_metadata_check CHECK (jsonb_typeof(metadata) = 'object'),
        ADD CONSTRAINT devices_assignment_check CHECK (
          (status = 'Assigned') = (shipment_id IS NOT NULL) AND (shipment_id IS NULL) = (set_id IS NULL)),
        ADD CONSTRAINT devices_retired_check CHECK ((status = 'Retired') = (retired_at IS NOT NULL))`);
    // The list filters: status (with the paging order) and shipmentId (also the devices of a shipment);
    // serialNumber is served by the unique index devices_tenant_serial_number_key.
    await queryRunner.query('CREATE INDEX devices_account_status_seq_idx ON devices (account_id, status, seq)');
    await queryRunner.query(
      'CREATE INDEX devices_account_shipment_idx ON devices (account_id, shipment_id, seq) WHERE shipment_id IS NOT NULL',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX devices_account_shipment_idx');
    await queryRunner.query('DROP INDEX devices_account_status_seq_idx');
    await queryRunner.query(`
      ALTER TABLE devices
        DROP CONSTRAINT devices_serial_number_check,
        DROP CONSTRAINT devices_model_check,
        DROP CONSTRAINT devices_firmware_version_check,
        DROP CONSTRAINT devices_battery_level_check,
        DROP CONSTRAINT devices_last_location_check,
        DROP CONSTRAINT devices_metadata_check,
        DROP CONSTRAINT devices_assignment_check,
        DROP CONSTRAINT devices_retired_check`);
    // Without the link columns a device cannot be assigned; up again then finds every row valid.
    await queryRunner.query(`UPDATE devices SET status = 'Available' WHERE status = 'Assigned'`);
    await queryRunner.query(`
      ALTER TABLE devices
        DROP COLUMN shipment_id,
        DROP COLUMN set_id,
        DROP COLUMN battery_level,
        DROP COLUMN last_seen_at,
        DROP COLUMN last_location_lat,
        DROP COLUMN last_location_lng`);
  }
}
