import type { CredentialProtocol } from '@tracking/contracts';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A device credential (migration 1763900031000-create-device-credentials.ts). */
@Entity({ name: 'device_credentials' })
export class CredentialEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  /** Commit-ordered position among the device's credentials; a string because it is a bigint. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId: string;

  @Column({ name: 'device_id', type: 'uuid' })
  deviceId: string;

  @Column({ type: 'text' })
  protocol: CredentialProtocol;

  @Column({ type: 'text' })
  identifier: string;

  /** SHA-256 of the secret's text; null for Teltonika, whose protocol carries no secret. */
  @Column({ name: 'secret_digest', type: 'bytea', nullable: true })
  secretDigest: Buffer | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;
}
