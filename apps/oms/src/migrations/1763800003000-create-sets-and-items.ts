import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateSetsAndItems1763800003000 implements MigrationInterface {
  name = 'CreateSetsAndItems1763800003000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // Sets and items belong to their shipment through the foreign keys: deleting a shipment deletes its
    // sets, deleting a set its items. The checks repeat the gateway's validation, as for points of interest.
    await queryRunner.query(`
      CREATE TABLE sets (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        shipment_id uuid NOT NULL REFERENCES shipments (id) ON DELETE CASCADE,
        name text NOT NULL,
        kind text NOT NULL,
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT sets_name_check CHECK (char_length(name) BETWEEN 1 AND 200),
        CONSTRAINT sets_kind_check CHECK (kind IN ('Pallet', 'Parcel', 'Container', 'Tote', 'Other'))
      )`);
    // Serves keyset pages of a shipment's sets and the cascade from shipments.
    await queryRunner.query('CREATE UNIQUE INDEX sets_shipment_seq_idx ON sets (shipment_id, seq)');
    await queryRunner.query(`
      CREATE TABLE items (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        set_id uuid NOT NULL REFERENCES sets (id) ON DELETE CASCADE,
        sku text NOT NULL,
        description text,
        quantity integer NOT NULL,
        unit text,
        metadata jsonb NOT NULL DEFAULT '{}',
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT items_sku_check CHECK (char_length(sku) BETWEEN 1 AND 100),
        CONSTRAINT items_description_check CHECK (char_length(description) <= 2000),
        CONSTRAINT items_quantity_check CHECK (quantity BETWEEN 1 AND 1000000),
        CONSTRAINT items_unit_check CHECK (char_length(unit) BETWEEN 1 AND 20),
        CONSTRAINT items_metadata_check CHECK (jsonb_typeof(metadata) = 'object')
      )`);
    // Serves keyset pages of a set's items and the cascade from sets.
    await queryRunner.query('CREATE UNIQUE INDEX items_set_seq_idx ON items (set_id, seq)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE items');
    await queryRunner.query('DROP TABLE sets');
  }
}
