import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Room in each page of `shipment_evaluations` for the next version of its rows: every evaluation updates
 * its shipment's row, and an update that fits in the page and leaves the indexed `due_at` alone is HOT
 * (`EvaluationRecordRepository.save`). Pages written before keep their layout until rewritten.
 */
export class KeepEvaluationUpdatesHot1763800024000 implements MigrationInterface {
  name = 'KeepEvaluationUpdatesHot1763800024000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE shipment_evaluations SET (fillfactor = 70)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE shipment_evaluations RESET (fillfactor)');
  }
}
