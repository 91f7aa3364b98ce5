import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A delivery's attempt log keeps its last 20 attempts (docs/webhook-delivery.md, "Attempt log and
 * retention"), with `attempts_total` counting every attempt ever made: every redeliver had appended to an
 * unbounded jsonb, rewritten whole at each attempt, until one delivery no longer fitted a NATS reply.
 * Logs longer than that are cut here once. The partial index finds settled deliveries past their
 * retention; the claim's updates (lease only) stay HOT, since neither `updated_at` nor `status` changes
 * there.
 */
export class BoundDeliveryAttemptLogs1763800029100 implements MigrationInterface {
  name = 'BoundDeliveryAttemptLogs1763800029100';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE webhook_deliveries ADD COLUMN attempts_total integer NOT NULL DEFAULT 0');
    await queryRunner.query(
      `UPDATE webhook_deliveries SET attempts_total = jsonb_array_length(attempts),
         attempts = jsonb_path_query_array(attempts, '$[last - 19 to last]')
       WHERE jsonb_array_length(attempts) > 0`,
    );
    await queryRunner.query("CREATE INDEX webhook_deliveries_settled_idx ON webhook_deliveries (updated_at) WHERE status <> 'Pending'");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX webhook_deliveries_settled_idx');
    await queryRunner.query('ALTER TABLE webhook_deliveries DROP COLUMN attempts_total');
  }
}
