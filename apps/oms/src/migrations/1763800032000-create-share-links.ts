import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Share links (docs/share-links.md): a shipment's public, expiring views. Only the SHA-256 digest of a
 * link's token is stored, under a unique index: the public route finds a link by one index probe and
 * a database read never yields a usable token. A link goes with its shipment (`ON DELETE CASCADE`).
 */
export class CreateShareLinks1763800032000 implements MigrationInterface {
  name = 'CreateShareLinks1763800032000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE share_links (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        shipment_id uuid NOT NULL REFERENCES shipments (id) ON DELETE CASCADE,
        token_digest bytea NOT NULL,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz,
        CONSTRAINT share_links_digest_check CHECK (octet_length(token_digest) = 32),
        CONSTRAINT share_links_expiry_check CHECK (expires_at > created_at)
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX share_links_token_digest_key ON share_links (token_digest)');
    await queryRunner.query('CREATE UNIQUE INDEX share_links_shipment_seq_idx ON share_links (shipment_id, seq)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE share_links');
  }
}
