import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The senders' claim (docs/webhook-delivery.md) walks the webhooks that have Pending deliveries and takes
 * each one's earliest due deliveries, up to its per-webhook cap: this index answers both the walk (a
 * loose index scan over `webhook_id`) and each webhook's earliest due rows, however large a dead
 * receiver's backlog grows.
 *
 * The table is a queue: every delivery is updated two or three times within seconds of its insert. Room
 * left in each page lets the lease's update stay on the page without a new index entry (HOT), and
 * vacuuming early keeps the dead entries the claim's index scans step over few.
 */
export class IndexPendingDeliveries1763800013500 implements MigrationInterface {
  name = 'IndexPendingDeliveries1763800013500';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      "CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'Pending'",
    );
    await queryRunner.query(
      'ALTER TABLE webhook_deliveries SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0)',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE webhook_deliveries RESET (fillfactor, autovacuum_vacuum_scale_factor, autovacuum_vacuum_insert_scale_factor, autovacuum_vacuum_cost_delay)',
    );
    await queryRunner.query('DROP INDEX webhook_deliveries_pending_idx');
  }
}
