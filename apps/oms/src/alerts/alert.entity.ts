import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { AlertKind, AlertStatus } from '@tracking/contracts';

/** An alert's row (migration CreateAlertsAndVisits). Alerts carry no version: clients never edit them. */
@Entity({ name: 'alerts' })
export class AlertEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  /** Commit-ordered position within the account; a string because it is a bigint. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId: string;

  @Column({ name: 'shipment_id', type: 'uuid' })
  shipmentId: string;

  @Column({ name: 'device_id', type: 'uuid', nullable: true })
  deviceId: string | null;

  @Column({ type: 'text' })
  kind: AlertKind;

  @Column({ type: 'text' })
  status: AlertStatus;

  @Column({ name: 'started_at', type: 'timestamptz' })
  startedAt: Date;

  @Column({ name: 'ended_at', type: 'timestamptz', nullable: true })
  endedAt: Date | null;

  @Column({ type: 'double precision' })
  threshold: number;

  @Column({ name: 'peak_value', type: 'double precision', nullable: true })
  peakValue: number | null;

  @Column({ name: 'acknowledged_at', type: 'timestamptz', nullable: true })
  acknowledgedAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
