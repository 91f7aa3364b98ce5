import type { JWK } from 'jose';
import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'signing_keys' })
export class SigningKeyEntity {
  @PrimaryColumn({ type: 'text' })
  kid: string;

  @Column({ type: 'text' })
  algorithm: string;

  /** The private key in plaintext: only keys written while no key-encryption key was configured. */
  @Column({ name: 'private_jwk', type: 'jsonb', nullable: true })
  privateJwk: JWK | null;

  /** The id of the key-encryption key that wraps the data key of `encryptedPrivateJwk`. */
  @Column({ name: 'kek_id', type: 'text', nullable: true })
  kekId: string | null;

  /** The private JWK sealed by `KeyEnvelope` (AES-256-GCM under a data key wrapped by the KEK `kekId`). */
  @Column({ name: 'encrypted_private_jwk', type: 'text', nullable: true })
  encryptedPrivateJwk: string | null;

  @Column({ name: 'public_jwk', type: 'jsonb' })
  publicJwk: JWK;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** Set when a newer key took over signing; a retired key still verifies until its tokens expire. */
  @Column({ name: 'retired_at', type: 'timestamptz', nullable: true })
  retiredAt: Date | null;
}
