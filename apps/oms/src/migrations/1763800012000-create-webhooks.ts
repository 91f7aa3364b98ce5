import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks and their deliveries (docs/webhooks.md).
 *
 * A delivery is one event for one webhook: created when the event reaches the OMS (or by a test ping or
 * nothing else), then sent, retried on its schedule and logged attempt by attempt. It keeps the exact body
 * it sends, so that retries and redeliveries send the same bytes whatever happens to the feed. Senders
 * claim due deliveries with `FOR UPDATE SKIP LOCKED` and hold them by `lease_until`, so that any number
 * of workers share them and a killed worker's claims come back when the lease lapses.
 */
export class CreateWebhooks1763800012000 implements MigrationInterface {
  name = 'CreateWebhooks1763800012000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE webhooks (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        url text NOT NULL,
        description text,
        -- '{*}' for every type, else the listed types.
        event_types text[] NOT NULL,
        status text NOT NULL,
        disabled_reason text,
        -- 'whsec_' + base64 of 32 random bytes; the previous one keeps signing until previous_secret_expires_at.
        secret text NOT NULL,
        previous_secret text,
        previous_secret_expires_at timestamptz,
        -- Since when every delivery attempt has failed (null after any success); 5 days of it disable the webhook.
        failing_since timestamptz,
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT webhooks_status_check CHECK (status IN ('Active', 'Disabled')),
        CONSTRAINT webhooks_previous_secret_check CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL))
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX webhooks_keyset_idx ON webhooks (tenant_id, account_id, seq)');
    await queryRunner.query(`
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        webhook_id uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
        event_id uuid NOT NULL,
        event_type text NOT NULL,
        -- The request body, exactly as sent on every attempt.
        payload text NOT NULL,
        status text NOT NULL,
        -- [{at, statusCode, durationMs, error}], oldest first.
        attempts jsonb NOT NULL DEFAULT '[]',
        attempt_count integer NOT NULL DEFAULT 0,
        -- When the next attempt is due; null once Succeeded or Failed.
        next_attempt_at timestamptz,
        -- A sender holds the delivery until then; a lapsed lease makes it due again.
        lease_until timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('Pending', 'Succeeded', 'Failed')),
        CONSTRAINT webhook_deliveries_due_check CHECK ((status = 'Pending') = (next_attempt_at IS NOT NULL)),
        -- An event reaches a webhook once, however often the stream redelivers it.
        CONSTRAINT webhook_deliveries_event_key UNIQUE (webhook_id, event_id)
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX webhook_deliveries_keyset_idx ON webhook_deliveries (tenant_id, account_id, webhook_id, seq)');
    await queryRunner.query('CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = \'Pending\'');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE webhook_deliveries');
    await queryRunner.query('DROP TABLE webhooks');
  }
}
