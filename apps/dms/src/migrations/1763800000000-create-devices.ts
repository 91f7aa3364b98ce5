import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateDevices1763800000000 implements MigrationInterface {
  name = 'CreateDevices1763800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE devices (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        serial_number text NOT NULL,
        model text NOT NULL,
        status text NOT NULL CHECK (status IN ('Available', 'Assigned', 'Retired')),
        firmware_version text,
        metadata jsonb NOT NULL DEFAULT '{}',
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        retired_at timestamptz
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX devices_account_seq_idx ON devices (account_id, seq)');
    await queryRunner.query('CREATE UNIQUE INDEX devices_tenant_serial_number_key ON devices (tenant_id, serial_number)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE devices');
  }
}
