import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { SetKind } from '@tracking/contracts';

@Entity({ name: 'sets' })
export class SetEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  /** Commit-ordered position within the shipment, for keyset paging; a string because it is a bigint. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq: string;

  @Column({ name: 'shipment_id', type: 'uuid' })
  shipmentId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  kind: SetKind;

  @Column({ type: 'integer' })
  version: number;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
