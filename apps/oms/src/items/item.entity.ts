import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Metadata } from '@tracking/contracts';

/** An item of a set; its shipment is the set's, so the row does not repeat it. */
@Entity({ name: 'items' })
export class ItemEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  /** Commit-ordered position within the set, for keyset paging; a string because it is a bigint. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq: string;

  @Column({ name: 'set_id', type: 'uuid' })
  setId: string;

  @Column({ type: 'text' })
  sku: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ type: 'integer' })
  quantity: number;

  @Column({ type: 'text', nullable: true })
  unit: string | null;

  @Column({ type: 'jsonb' })
  metadata: Metadata;

  @Column({ type: 'integer' })
  version: number;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
