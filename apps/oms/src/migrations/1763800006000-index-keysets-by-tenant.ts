import type { MigrationInterface, QueryRunner } from 'typeorm';

/** [name, unique, table, columns before, columns after]: each keyset index, rebuilt under its own name. */
const KEYSET_INDEXES: [name: string, unique: boolean, table: string, before: string, after: string][] = [
  ['shipments_account_seq_idx', true, 'shipments', 'account_id, seq', 'tenant_id, account_id, seq'],
  ['shipments_account_status_seq_idx', false, 'shipments', 'account_id, status, seq', 'tenant_id, account_id, status, seq'],
  ['points_of_interest_account_seq_idx', true, 'points_of_interest', 'account_id, seq', 'tenant_id, account_id, seq'],
  ['operations_account_seq_idx', true, 'operations', 'account_id, seq', 'tenant_id, account_id, seq'],
];

/**
 * The keyset indexes of the pages lead with every equality of the page's scope, `(tenant_id, account_id)`,
 * then the filter column, then the position: a page's whole WHERE clause is then the index condition and
 * its ORDER BY the index order, so PostgreSQL reads exactly the page's rows in order, and does so also on a
 * table it has no statistics of (never analyzed: a fresh database, a big account loaded faster than
 * autovacuum runs). The former `(account_id, ...)` indexes left `tenant_id` to a filter; without
 * statistics the planner then took an account for a few rows and sorted all of them for every page.
 * The indexes keep their names, which earlier migrations' `down` refer to.
 *
 * Operation results of one status come from a new partial index in entry order; without a status they
 * come in primary key order.
 */
export class IndexKeysetsByTenant1763800006000 implements MigrationInterface {
  name = 'IndexKeysetsByTenant1763800006000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const [name, unique, table, , after] of KEYSET_INDEXES) await rebuild(queryRunner, name, unique, table, after);
    await queryRunner.query(
      'CREATE INDEX operation_entries_status_idx ON operation_entries (operation_id, status, entry_index) WHERE status IS NOT NULL',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX operation_entries_status_idx');
    for (const [name, unique, table, before] of KEYSET_INDEXES) await rebuild(queryRunner, name, unique, table, before);
  }
}

async function rebuild(queryRunner: QueryRunner, name: string, unique: boolean, table: string, columns: string): Promise<void> {
  await queryRunner.query(`DROP INDEX ${name}`);
  await queryRunner.query(`CREATE ${unique ? 'UNIQUE ' : ''}INDEX ${name} ON ${table} (${columns})`);
}
