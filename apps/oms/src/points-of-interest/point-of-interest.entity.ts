import { VersionedRecord } from '@tracking/database';
import { Column, Entity } from 'typeorm';
import type { Metadata, PointOfInterestKind } from '@tracking/contracts';

@Entity({ name: 'points_of_interest' })
export class PointOfInterestEntity extends VersionedRecord {
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

  @Column({ name: 'dwell_seconds', type: 'integer' })
  dwellSeconds: number;

  @Column({ type: 'text', nullable: true })
  address: string | null;

  @Column({ type: 'jsonb' })
  metadata: Metadata;
}
