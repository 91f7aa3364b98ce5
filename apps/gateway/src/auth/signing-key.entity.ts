import type { JWK } from 'jose';
import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'signing_keys' })
export class SigningKeyEntity {
  @PrimaryColumn({ type: 'text' })
  kid: string;

  @Column({ type: 'text' })
  algorithm: string;

  @Column({ name: 'private_jwk', type: 'jsonb' })
  privateJwk: JWK;

  @Column({ name: 'public_jwk', type: 'jsonb' })
  publicJwk: JWK;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** Set when a newer key took over signing; a retired key still verifies until its tokens expire. */
  @Column({ name: 'retired_at', type: 'timestamptz', nullable: true })
  retiredAt: Date | null;
}
