import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Room for private signing keys encrypted at rest: `encrypted_private_jwk` (sealed with a data key that
 * the key-encryption key `kek_id` wraps) replaces `private_jwk`, which stays only for keys written before
 * a key-encryption key was configured. The migration does not encrypt: it has no key. The gateway seals
 * every plaintext key under its advisory lock when it starts with KEY_ENCRYPTION_KEYS set.
 */
export class SealSigningKeys1764000000000 implements MigrationInterface {
  name = 'SealSigningKeys1764000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE signing_keys ALTER COLUMN private_jwk DROP NOT NULL');
    await queryRunner.query('ALTER TABLE signing_keys ADD COLUMN kek_id text, ADD COLUMN encrypted_private_jwk text');
    await queryRunner.query(`
      ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_one_private_form CHECK (
        (private_jwk IS NULL) <> (encrypted_private_jwk IS NULL) AND (encrypted_private_jwk IS NULL) = (kek_id IS NULL)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // Sealed keys cannot go back without their key-encryption key: refuse rather than lose them.
    const [{ sealed }] = (await queryRunner.query('SELECT count(*)::int AS sealed FROM signing_keys WHERE private_jwk IS NULL')) as [{ sealed: number }];
    if (sealed > 0) throw new Error(`${sealed} signing keys are encrypted; unseal them before reverting this migration`);
    await queryRunner.query('ALTER TABLE signing_keys DROP CONSTRAINT signing_keys_one_private_form');
    await queryRunner.query('ALTER TABLE signing_keys DROP COLUMN kek_id, DROP COLUMN encrypted_private_jwk');
    await queryRunner.query('ALTER TABLE signing_keys ALTER COLUMN private_jwk SET NOT NULL');
  }
}
