import type { QueryRunner } from 'typeorm';

/**
 * The outbox of one service's database: messages written in the transaction of the change they
 * describe, waiting for the relay to publish them on JetStream. A row is deleted once JetStream has
 * acknowledged it, so the table holds only the backlog.
 *
 * A statement trigger notifies `outbox` on insert; PostgreSQL delivers notifications at commit only, so
 * the relays wake exactly when there is something committed to publish.
 */
export async function createOutboxTable(queryRunner: QueryRunner): Promise<void> {
  await queryRunner.query(`
    CREATE TABLE outbox (
      seq bigserial PRIMARY KEY,
      -- The message id: JetStream's Nats-Msg-Id, an event's id.
      msg_id uuid NOT NULL,
      -- The subject without the deployment's NATS_SUBJECT_PREFIX, which the relay adds.
      subject text NOT NULL,
      payload text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
  await queryRunner.query(`
    CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('outbox', '');
      RETURN NULL;
    END $$`);
  await queryRunner.query('CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify()');
}

export async function dropOutboxTable(queryRunner: QueryRunner): Promise<void> {
  await queryRunner.query('DROP TABLE outbox');
  await queryRunner.query('DROP FUNCTION outbox_notify()');
}
