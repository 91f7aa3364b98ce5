import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The bounds on how much outbound traffic an account's events may cause (docs/webhook-delivery.md,
 * "Amplification bounds"; docs/alerts-and-visits.md, "Alerts per shipment and hour"):
 *
 * - `webhook_delivery_budgets`: per account and clock hour (UTC), how many deliveries the dispatch asked
 *   for; the dispatch adds to the row under its lock, so concurrent dispatchers on any number of workers
 *   share one count. Rows of past hours are deleted by the next dispatch of the account.
 * - `alert_suppressions`: per shipment and clock hour, the alerts the evaluation did not open because the
 *   shipment had opened its hourly allowance; the row's insert is what publishes the one
 *   `alert.suppressed` event of that shipment and hour.
 */
export class BoundWebhookAmplification1763800029300 implements MigrationInterface {
  name = 'BoundWebhookAmplification1763800029300';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE webhook_delivery_budgets (
        account_id uuid NOT NULL,
        window_start timestamptz NOT NULL,
        requested bigint NOT NULL,
        PRIMARY KEY (account_id, window_start)
      )`);
    await queryRunner.query(`
      CREATE TABLE alert_suppressions (
        shipment_id uuid NOT NULL,
        window_start timestamptz NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (shipment_id, window_start)
      )`);
    // The hourly count of a shipment's alerts reads this range.
    await queryRunner.query('CREATE INDEX alerts_shipment_created_idx ON alerts (shipment_id, created_at)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX alerts_shipment_created_idx');
    await queryRunner.query('DROP TABLE alert_suppressions');
    await queryRunner.query('DROP TABLE webhook_delivery_budgets');
  }
}
