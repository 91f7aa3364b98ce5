import type { MigrationInterface, QueryRunner } from 'typeorm';

/** [name, unique, columns before, columns after, predicate]: each keyset index, rebuilt under its own name. */
const KEYSET_INDEXES: [name: string, unique: boolean, before: string, after: string, where: string][] = [
  ['devices_account_seq_idx', true, 'account_id, seq', 'tenant_id, account_id, seq', ''],
  ['devices_account_status_seq_idx', false, 'account_id, status, seq', 'tenant_id, account_id, status, seq', ''],
  [
    'devices_account_shipment_idx',
    false,
    'account_id, shipment_id, seq',
    'tenant_id, account_id, shipment_id, seq',
    ' WHERE shipment_id IS NOT NULL',
  ],
];

/**
 * The keyset indexes of the device pages lead with every equality of the page's scope, `(tenant_id,
 * account_id)`, then the filter column, then the position: a page's whole WHERE clause is then the index
 * condition and its ORDER BY the index order, so PostgreSQL reads exactly the page's rows in order, and
 * does so also on a table it has no statistics of (never analyzed). The former `(account_id, ...)`
 * indexes left `tenant_id` to a filter; without statistics the planner then took an account for a few
 * rows and sorted all of them for every page. The indexes keep their names, which earlier migrations'
 * `down` refer to.
 */
export class IndexDeviceKeysetsByTenant1763800009000 implements MigrationInterface {
  name = 'IndexDeviceKeysetsByTenant1763800009000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const [name, unique, , after, where] of KEYSET_INDEXES) await rebuild(queryRunner, name, unique, after, where);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const [name, unique, before, , where] of KEYSET_INDEXES) await rebuild(queryRunner, name, unique, before, where);
  }
}

async function rebuild(queryRunner: QueryRunner, name: string, unique: boolean, columns: string, where: string): Promise<void> {
  await queryRunner.query(`DROP INDEX ${name}`);
  await queryRunner.query(`CREATE ${unique ? 'UNIQUE ' : ''}INDEX ${name} ON devices (${columns})${where}`);
}
