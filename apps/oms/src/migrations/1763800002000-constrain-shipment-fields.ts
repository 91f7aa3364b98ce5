import type { MigrationInterface, QueryRunner } from 'typeorm';

export class ConstrainShipmentFields1763800002000 implements MigrationInterface {
  name = 'ConstrainShipmentFields1763800002000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // The checks repeat the API's rules so that no other writer can store what the API refuses.
    await queryRunner.query(`
      ALTER TABLE shipments
        ADD CONSTRAINT shipments_name_check CHECK (char_length(name) BETWEEN 1 AND 200),
        ADD CONSTRAINT shipments_reference_check CHECK (char_length(reference) BETWEEN 1 AND 200),
        ADD CONSTRAINT shipments_mode_check CHECK (mode IN ('Road', 'Air', 'Sea', 'Rail', 'Multimodal')),
        ADD CONSTRAINT shipments_carrier_check CHECK (char_length(carrier) BETWEEN 1 AND 200),
        ADD CONSTRAINT shipments_planned_check CHECK (planned_arrival_at >= planned_departure_at),
        ADD CONSTRAINT shipments_tags_check CHECK (cardinality(tags) <= 20),
        ADD CONSTRAINT shipments_metadata_check CHECK (jsonb_typeof(metadata) = 'object')`);
    // The list filters: status (with the paging order), tag (array containment) and reference
    // (served by the unique index shipments_account_reference_key).
    await queryRunner.query('CREATE INDEX shipments_account_status_seq_idx ON shipments (account_id, status, seq)');
    await queryRunner.query('CREATE INDEX shipments_tags_idx ON shipments USING GIN (tags)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX shipments_tags_idx');
    await queryRunner.query('DROP INDEX shipments_account_status_seq_idx');
    await queryRunner.query(`
      ALTER TABLE shipments
        DROP CONSTRAINT shipments_name_check,
        DROP CONSTRAINT shipments_reference_check,
        DROP CONSTRAINT shipments_mode_check,
        DROP CONSTRAINT shipments_carrier_check,
        DROP CONSTRAINT shipments_planned_check,
        DROP CONSTRAINT shipments_tags_check,
        DROP CONSTRAINT shipments_metadata_check`);
  }
}
