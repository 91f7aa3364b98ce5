import type { OperationResultStatus, OperationStatus, OperationType } from '@tracking/contracts';
import { VersionedRecord } from '@tracking/database';
import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'operations' })
export class OperationEntity extends VersionedRecord {
  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId: string;

  @Column({ type: 'text' })
  type: OperationType;

  @Column({ type: 'text' })
  status: OperationStatus;

  @Column({ type: 'integer' })
  total: number;

  @Column({ type: 'integer' })
  processed: number;

  @Column({ type: 'integer' })
  succeeded: number;

  @Column({ type: 'integer' })
  failed: number;

  @Column({ type: 'boolean' })
  settled: boolean;

  @Column({ name: 'request_id', type: 'text', nullable: true })
  requestId: string | null;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt: Date | null;
}

/** One entry of a bulk request; `status` is null until the entry has been processed. */
@Entity({ name: 'operation_entries' })
export class OperationEntryEntity {
  @PrimaryColumn({ name: 'operation_id', type: 'uuid' })
  operationId: string;

  @PrimaryColumn({ name: 'entry_index', type: 'integer' })
  index: number;

  @Column({ name: 'set_id', type: 'uuid', nullable: true })
  setId: string | null;

  @Column({ name: 'device_id', type: 'uuid' })
  deviceId: string;

  @Column({ type: 'text', nullable: true })
  status: OperationResultStatus | null;

  @Column({ name: 'error_code', type: 'text', nullable: true })
  errorCode: string | null;

  @Column({ name: 'error_message', type: 'text', nullable: true })
  errorMessage: string | null;
}
