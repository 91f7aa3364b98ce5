import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Metadata, PointOfInterestKind } from '@tracking/contracts';

@Entity({ name: 'points_of_interest' })
export class PointOfInterestEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  /** Commit-ordered position within the account, for keyset paging; a string because it is a bigint. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  kind: PointOfInterestKind;

  @Column({ type: 'double precision' })
  lat: number;

  @Column({ type: 'double precision' })
  lng: number;

  @Column({ name: 'radius_meters', type: 'integer' })
  radiusMeters: number;

  @Column({ type: 'text', nullable: true })
  address: string | null;

  @Column({ type: 'jsonb' })
  metadata: Metadata;

  @Column({ type: 'integer' })
  version: number;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
