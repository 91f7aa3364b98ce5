import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The keyset indexes of the device pages lead with every equality of the page's scope, `(tenant_id,
 * account_id)`, then its filter column, then the position: a page's whole WHERE clause is then the index
 * condition and its ORDER BY the index order, so PostgreSQL reads exactly the page's rows in order, and
 * does so also on a table it has no statistics of (never analyzed). The former `(account_id, ...)`
 * indexes left `tenant_id` to a filter; without statistics the planner then took an account for a few
 * rows and sorted all of them for every page.
 */
export class IndexDeviceKeysetsByTenant1763800009000 implements MigrationInterface {
  name = 'IndexDeviceKeysetsByTenant1763800009000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('CREATE UNIQUE INDEX devices_tenant_account_seq_idx ON devices (tenant_id, account_id, seq)');
    await queryRunner.query('CREATE INDEX devices_tenant_account_status_seq_idx ON devices (tenant_id, account_id, status, seq)');
    await queryRunner.query(
      'CREATE INDEX devices_tenant_account_shipment_seq_idx ON devices (tenant_id, account_id, shipment_id, seq) WHERE shipment_id IS NOT NULL',
    );
    await queryRunner.query('DROP INDEX devices_account_seq_idx');
    await queryRunner.query('DROP INDEX devices_account_status_seq_idx');
    await queryRunner.query('DROP INDEX devices_account_shipment_idx');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE INDEX devices_account_shipment_idx ON devices (account_id, shipment_id, seq) WHERE shipment_id IS NOT NULL',
    );
    await queryRunner.query('CREATE INDEX devices_account_status_seq_idx ON devices (account_id, status, seq)');
    await queryRunner.query('CREATE UNIQUE INDEX devices_account_seq_idx ON devices (account_id, seq)');
    await queryRunner.query('DROP INDEX devices_tenant_account_shipment_seq_idx');
    await queryRunner.query('DROP INDEX devices_tenant_account_status_seq_idx');
    await queryRunner.query('DROP INDEX devices_tenant_account_seq_idx');
  }
}
