import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateIdentity1763800000000 implements MigrationInterface {
  name = 'CreateIdentity1763800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE tenants (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        created_at timestamptz NOT NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE accounts (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id),
        name text NOT NULL,
        created_at timestamptz NOT NULL
      )`);
    await queryRunner.query('CREATE INDEX accounts_tenant_idx ON accounts (tenant_id)');
    await queryRunner.query(`
      CREATE TABLE applications (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id),
        name text NOT NULL,
        secret_hash text NOT NULL,
        status text NOT NULL CHECK (status IN ('Active', 'Disabled')),
        role_assignments jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await queryRunner.query('CREATE INDEX applications_tenant_idx ON applications (tenant_id)');
    await queryRunner.query(`
      CREATE TABLE signing_keys (
        kid text PRIMARY KEY,
        algorithm text NOT NULL,
        private_jwk jsonb NOT NULL,
        public_jwk jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        retired_at timestamptz
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE signing_keys');
    await queryRunner.query('DROP TABLE applications');
    await queryRunner.query('DROP TABLE accounts');
    await queryRunner.query('DROP TABLE tenants');
  }
}
