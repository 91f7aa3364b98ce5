import { VersionedRecord } from '@tracking/database';
import { Column, Entity } from 'typeorm';
import type { SetKind } from '@tracking/contracts';

@Entity({ name: 'sets' })
export class SetEntity extends VersionedRecord {
  @Column({ name: 'shipment_id', type: 'uuid' })
  shipmentId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  kind: SetKind;
}
