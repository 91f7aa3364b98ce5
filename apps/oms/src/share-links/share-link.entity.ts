import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A share link's row (migration CreateShareLinks); its token is kept only as a SHA-256 digest. */
@Entity({ name: 'share_links' })
export class ShareLinkEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  /** Commit-ordered position within the shipment; a string because it is a bigint. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId: string;

  @Column({ name: 'shipment_id', type: 'uuid' })
  shipmentId: string;

  @Column({ name: 'token_digest', type: 'bytea', select: false })
  tokenDigest: Buffer;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;
}
