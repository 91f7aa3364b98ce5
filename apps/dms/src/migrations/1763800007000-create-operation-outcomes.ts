import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The DMS's record of bulk-operation entries it has decided, written in the same transaction as their
 * effect: a chunk the OMS sends again (its worker died, or it never heard the answer) is answered from
 * here, so no entry is applied twice and none loses its outcome. Closed operations refuse more chunks.
 */
export class CreateOperationOutcomes1763800007000 implements MigrationInterface {
  name = 'CreateOperationOutcomes1763800007000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE operation_outcomes (
        operation_id uuid NOT NULL,
        entry_index integer NOT NULL,
        error_code text,
        error_message text,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (operation_id, entry_index),
        CONSTRAINT operation_outcomes_error_check CHECK ((error_code IS NULL) = (error_message IS NULL))
      )`);
    await queryRunner.query(`
      CREATE TABLE closed_operations (
        operation_id uuid PRIMARY KEY,
        closed_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE closed_operations');
    await queryRunner.query('DROP TABLE operation_outcomes');
  }
}
