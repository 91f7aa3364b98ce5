import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A visit's row (migration CreateAlertsAndVisits): one stay of a shipment at a point of interest. */
@Entity({ name: 'visits' })
export class VisitEntity {
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

  @Column({ name: 'poi_id', type: 'uuid' })
  poiId: string;

  @Column({ name: 'arrived_at', type: 'timestamptz' })
  arrivedAt: Date;

  @Column({ name: 'departed_at', type: 'timestamptz', nullable: true })
  departedAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
