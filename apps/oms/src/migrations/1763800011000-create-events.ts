import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The account's event feed (`GET /events`): every event of the events stream, stored once (by id) in
 * the order the OMS recorded it (`seq`, taken under the account's insert-order lock, so that pages
 * keep the paging guarantees while events arrive). `body` is the event's JSON exactly as clients see it.
 */
export class CreateEvents1763800011000 implements MigrationInterface {
  name = 'CreateEvents1763800011000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE events (
        seq bigserial PRIMARY KEY,
        id uuid NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        type text NOT NULL,
        occurred_at timestamptz NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        body text NOT NULL,
        CONSTRAINT events_id_key UNIQUE (id)
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX events_keyset_idx ON events (tenant_id, account_id, seq)');
    await queryRunner.query('CREATE UNIQUE INDEX events_type_keyset_idx ON events (tenant_id, account_id, type, seq)');
    // Retention deletes the oldest first.
    await queryRunner.query('CREATE INDEX events_recorded_at_idx ON events (recorded_at)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE events');
  }
}
