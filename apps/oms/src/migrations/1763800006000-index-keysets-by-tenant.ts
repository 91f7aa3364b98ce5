import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The keyset indexes of the pages lead with every equality of the page's scope, `(tenant_id, account_id)`,
 * then its filter column, then the position: a page's whole WHERE clause is then the index condition and
 * its ORDER BY the index order, so PostgreSQL reads exactly the page's rows in order, and does so also on a
 * table it has no statistics of (never analyzed: a fresh database, a big account loaded faster than
 * autovacuum runs). The former `(account_id, seq)` indexes left `tenant_id` to a filter; without
 * statistics the planner then took an account for a few rows and sorted all of them for every page.
 *
 * Operation results of one status come from a partial index in entry order; without a status they come
 * in primary key order.
 */
export class IndexKeysetsByTenant1763800006000 implements MigrationInterface {
  name = 'IndexKeysetsByTenant1763800006000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('CREATE UNIQUE INDEX shipments_tenant_account_seq_idx ON shipments (tenant_id, account_id, seq)');
    await queryRunner.query('CREATE INDEX shipments_tenant_account_status_seq_idx ON shipments (tenant_id, account_id, status, seq)');
    await queryRunner.query('DROP INDEX shipments_account_seq_idx');
    await queryRunner.query('DROP INDEX shipments_account_status_seq_idx');
    await queryRunner.query(
      'CREATE UNIQUE INDEX points_of_interest_tenant_account_seq_idx ON points_of_interest (tenant_id, account_id, seq)',
    );
    await queryRunner.query('DROP INDEX points_of_interest_account_seq_idx');
    await queryRunner.query('CREATE UNIQUE INDEX operations_tenant_account_seq_idx ON operations (tenant_id, account_id, seq)');
    await queryRunner.query('DROP INDEX operations_account_seq_idx');
    await queryRunner.query(
      'CREATE INDEX operation_entries_status_idx ON operation_entries (operation_id, status, entry_index) WHERE status IS NOT NULL',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX operation_entries_status_idx');
    await queryRunner.query('CREATE UNIQUE INDEX operations_account_seq_idx ON operations (account_id, seq)');
    await queryRunner.query('DROP INDEX operations_tenant_account_seq_idx');
    await queryRunner.query('CREATE UNIQUE INDEX points_of_interest_account_seq_idx ON points_of_interest (account_id, seq)');
    await queryRunner.query('DROP INDEX points_of_interest_tenant_account_seq_idx');
    await queryRunner.query('CREATE INDEX shipments_account_status_seq_idx ON shipments (account_id, status, seq)');
    await queryRunner.query('CREATE UNIQUE INDEX shipments_account_seq_idx ON shipments (account_id, seq)');
    await queryRunner.query('DROP INDEX shipments_tenant_account_status_seq_idx');
    await queryRunner.query('DROP INDEX shipments_tenant_account_seq_idx');
  }
}
