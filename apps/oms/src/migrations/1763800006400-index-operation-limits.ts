import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the operation quotas and the retention look up: an account's unfinished operations (counted
 * under the account's insert lock at every bulk request) and settled operations by when they finished.
 */
export class IndexOperationLimits1763800006400 implements MigrationInterface {
  name = 'IndexOperationLimits1763800006400';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX operations_unfinished_idx ON operations (account_id) INCLUDE (total, processed)
        WHERE status IN ('Pending', 'Running')`,
    );
    await queryRunner.query('CREATE INDEX operations_finished_idx ON operations (completed_at, id) WHERE settled');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX operations_finished_idx');
    await queryRunner.query('DROP INDEX operations_unfinished_idx');
  }
}
