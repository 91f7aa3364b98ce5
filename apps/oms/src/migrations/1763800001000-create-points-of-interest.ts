import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreatePointsOfInterest1763800001000 implements MigrationInterface {
  name = 'CreatePointsOfInterest1763800001000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // The checks repeat the gateway's validation so that no other writer can store what the API refuses.
    await queryRunner.query(`
      CREATE TABLE points_of_interest (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        name text NOT NULL,
        kind text NOT NULL,
        lat double precision NOT NULL,
        lng double precision NOT NULL,
        radius_meters integer NOT NULL DEFAULT 200,
        address text,
        metadata jsonb NOT NULL DEFAULT '{}',
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT points_of_interest_name_check CHECK (char_length(name) BETWEEN 1 AND 200),
        CONSTRAINT points_of_interest_kind_check
          CHECK (kind IN ('Warehouse', 'Port', 'Airport', 'Customer', 'Supplier', 'Other')),
        CONSTRAINT points_of_interest_lat_check CHECK (lat BETWEEN -90 AND 90),
        CONSTRAINT points_of_interest_lng_check CHECK (lng BETWEEN -180 AND 180),
        CONSTRAINT points_of_interest_radius_check CHECK (radius_meters BETWEEN 10 AND 100000),
        CONSTRAINT points_of_interest_address_check CHECK (char_length(address) <= 2000),
        CONSTRAINT points_of_interest_metadata_check CHECK (jsonb_typeof(metadata) = 'object')
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX points_of_interest_account_seq_idx ON points_of_interest (account_id, seq)');
    // A point of interest used only by closed shipments may be deleted; those keep a null reference.
    // The indexes serve both the in-use check before a delete and the SET NULL the delete cascades.
    await queryRunner.query('CREATE INDEX shipments_origin_id_idx ON shipments (origin_id) WHERE origin_id IS NOT NULL');
    await queryRunner.query(
      'CREATE INDEX shipments_destination_id_idx ON shipments (destination_id) WHERE destination_id IS NOT NULL',
    );
    await queryRunner.query(`
      ALTER TABLE shipments
        ADD CONSTRAINT shipments_origin_id_fkey
          FOREIGN KEY (origin_id) REFERENCES points_of_interest (id) ON DELETE SET NULL,
        ADD CONSTRAINT shipments_destination_id_fkey
          FOREIGN KEY (destination_id) REFERENCES points_of_interest (id) ON DELETE SET NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE shipments
        DROP CONSTRAINT shipments_origin_id_fkey,
        DROP CONSTRAINT shipments_destination_id_fkey`);
    await queryRunner.query('DROP INDEX shipments_origin_id_idx');
    await queryRunner.query('DROP INDEX shipments_destination_id_idx');
    await queryRunner.query('DROP TABLE points_of_interest');
  }
}
