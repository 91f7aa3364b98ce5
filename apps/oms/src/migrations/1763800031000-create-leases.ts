import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Leases: "one runner at a time" for the OMS's workers and replicas (docs/leases.md, `LeaseGroup` in
 * `@tracking/outbox`).
 *
 * - `lease_members`: per group, each live member's heartbeat (`expires_at` moves on with every renewal);
 *   the live members share the group's leases by rendezvous hashing.
 * - `leases`: one row per lease (an evaluation partition, the events feed): its holder, the epoch that
 *   each new holder moves on (the fence a holder's transactions check, `FOR KEY SHARE`), and until when
 *   it is held without a renewal.
 */
export class CreateLeases1763800031000 implements MigrationInterface {
  name = 'CreateLeases1763800031000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE lease_members (
        lease_group text NOT NULL,
        member text NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (lease_group, member)
      )`);
    await queryRunner.query(`
      CREATE TABLE leases (
        name text PRIMARY KEY,
        lease_group text NOT NULL,
        owner text,
        epoch bigint NOT NULL DEFAULT 0,
        expires_at timestamptz NOT NULL DEFAULT '-infinity'
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE leases');
    await queryRunner.query('DROP TABLE lease_members');
  }
}
