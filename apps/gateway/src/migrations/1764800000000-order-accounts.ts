import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `GET /v1/accounts` pages a tenant's accounts in creation order, by keyset on a per-row sequence like every
 * other collection: existing accounts are numbered by (created_at, id), new ones take the next value while
 * holding their tenant's insert lock (TenantRepository.insertAccount).
 */
export class OrderAccounts1764800000000 implements MigrationInterface {
  name = 'OrderAccounts1764800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE accounts ADD COLUMN seq bigint');
    await queryRunner.query(`
      UPDATE accounts SET seq = numbered.n
        FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM accounts) AS numbered
       WHERE accounts.id = numbered.id`);
    await queryRunner.query('CREATE SEQUENCE accounts_seq_seq OWNED BY accounts.seq');
    await queryRunner.query("SELECT setval('accounts_seq_seq', COALESCE((SELECT max(seq) FROM accounts), 0) + 1, false)");
    await queryRunner.query("ALTER TABLE accounts ALTER COLUMN seq SET DEFAULT nextval('accounts_seq_seq'), ALTER COLUMN seq SET NOT NULL");
    await queryRunner.query('CREATE UNIQUE INDEX accounts_tenant_seq_idx ON accounts (tenant_id, seq)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX accounts_tenant_seq_idx');
    await queryRunner.query('ALTER TABLE accounts DROP COLUMN seq');
  }
}
