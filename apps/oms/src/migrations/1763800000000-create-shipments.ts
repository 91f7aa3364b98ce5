import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateShipments1763800000000 implements MigrationInterface {
  name = 'CreateShipments1763800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE shipments (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        name text NOT NULL,
        reference text,
        status text NOT NULL,
        mode text,
        carrier text,
        origin_id uuid,
        destination_id uuid,
        planned_departure_at timestamptz,
        planned_arrival_at timestamptz,
        departed_at timestamptz,
        delivered_at timestamptz,
        completed_at timestamptz,
        cancelled_at timestamptz,
        tags text[] NOT NULL DEFAULT '{}',
        metadata jsonb NOT NULL DEFAULT '{}',
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT shipments_status_check
          CHECK (status IN ('Planned', 'InTransit', 'Delivered', 'Completed', 'Cancelled'))
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX shipments_account_seq_idx ON shipments (account_id, seq)');
    await queryRunner.query(
      'CREATE UNIQUE INDEX shipments_account_reference_key ON shipments (account_id, reference) WHERE reference IS NOT NULL',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE shipments');
  }
}
