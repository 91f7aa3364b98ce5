import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Wakes the webhook senders (docs/webhook-delivery.md, "Waking the senders"): a delivery that becomes
 * Pending, unleased and due now (a dispatch, a test ping, a redeliver) notifies the channel
 * `webhook_deliveries_due` when its transaction commits, so every worker's sender claims it at once,
 * whichever process wrote it. PostgreSQL folds the notifications of one transaction into one.
 */
export class NotifyDueDeliveries1763800031100 implements MigrationInterface {
  name = 'NotifyDueDeliveries1763800031100';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE FUNCTION notify_due_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('webhook_deliveries_due', '');
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER webhook_deliveries_due AFTER INSERT OR UPDATE ON webhook_deliveries FOR EACH ROW
      WHEN (NEW.status = 'Pending' AND NEW.lease_until IS NULL AND NEW.next_attempt_at <= clock_timestamp())
      EXECUTE FUNCTION notify_due_delivery()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER webhook_deliveries_due ON webhook_deliveries');
    await queryRunner.query('DROP FUNCTION notify_due_delivery()');
  }
}
