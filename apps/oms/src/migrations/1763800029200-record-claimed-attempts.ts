import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When a sender claimed a delivery for an attempt (docs/webhook-delivery.md, "Attempts in flight"): a
 * claim that finds the previous claim's lease lapsed with no outcome recorded logs that attempt, from this
 * time, as one whose outcome is unknown, so a killed sender's attempt is not missing from the log.
 */
export class RecordClaimedAttempts1763800029200 implements MigrationInterface {
  name = 'RecordClaimedAttempts1763800029200';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE webhook_deliveries ADD COLUMN claimed_at timestamptz');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE webhook_deliveries DROP COLUMN claimed_at');
  }
}
