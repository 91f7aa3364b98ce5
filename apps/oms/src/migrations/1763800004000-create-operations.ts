import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Bulk operations and their entries. An operation is durable here from the moment its 202 is sent; the
 * queue in Redis only wakes workers. Each entry's outcome is written in the transaction that moves the
 * operation's counts on, so the counts always equal the results.
 */
export class CreateOperations1763800004000 implements MigrationInterface {
  name = 'CreateOperations1763800004000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE operations (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        type text NOT NULL,
        status text NOT NULL,
        total integer NOT NULL,
        processed integer NOT NULL DEFAULT 0,
        succeeded integer NOT NULL DEFAULT 0,
        failed integer NOT NULL DEFAULT 0,
        -- True once a worker has closed the operation: nothing of it is left to do or to record.
        settled boolean NOT NULL DEFAULT false,
        request_id text,
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        started_at timestamptz,
        completed_at timestamptz,
        CONSTRAINT operations_type_check CHECK (type IN ('BulkSetAssignment', 'BulkRetire')),
        CONSTRAINT operations_status_check
          CHECK (status IN ('Pending', 'Running', 'Succeeded', 'PartiallySucceeded', 'Failed', 'Cancelled')),
        CONSTRAINT operations_progress_check
          CHECK (total BETWEEN 1 AND 10000 AND processed = succeeded + failed AND processed <= total)
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX operations_account_seq_idx ON operations (account_id, seq)');
    // What the workers' reconciliation scans for: operations still to run or to close.
    await queryRunner.query('CREATE INDEX operations_unsettled_idx ON operations (created_at) WHERE NOT settled');
    await queryRunner.query(`
      CREATE TABLE operation_entries (
        operation_id uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
        entry_index integer NOT NULL,
        set_id uuid,
        device_id uuid NOT NULL,
        status text,
        error_code text,
        error_message text,
        PRIMARY KEY (operation_id, entry_index),
        CONSTRAINT operation_entries_status_check CHECK (status IN ('Succeeded', 'Failed')),
        CONSTRAINT operation_entries_error_check CHECK ((status = 'Failed') = (error_code IS NOT NULL))
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE operation_entries');
    await queryRunner.query('DROP TABLE operations');
  }
}
