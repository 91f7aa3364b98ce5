import { VersionedRecord } from '@tracking/database';
import { Column, Entity } from 'typeorm';
import type { Metadata } from '@tracking/contracts';

/** An item of a set; its shipment is the set's, so the row does not repeat it. */
@Entity({ name: 'items' })
export class ItemEntity extends VersionedRecord {
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
}
