import type { WebhookStatus } from '@tracking/contracts';
import { VersionedRecord } from '@tracking/database';
import { Column, Entity } from 'typeorm';

/** A webhook (migration 1763800012000-create-webhooks.ts). */
@Entity({ name: 'webhooks' })
export class WebhookEntity extends VersionedRecord {
  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId: string;

  @Column({ type: 'text' })
  url: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  /** `['*']` for every type, else the listed types. */
  @Column({ name: 'event_types', type: 'text', array: true })
  eventTypes: string[];

  @Column({ type: 'text' })
  status: WebhookStatus;

  @Column({ name: 'disabled_reason', type: 'text', nullable: true })
  disabledReason: string | null;

  @Column({ type: 'text' })
  secret: string;

  @Column({ name: 'previous_secret', type: 'text', nullable: true })
  previousSecret: string | null;

  @Column({ name: 'previous_secret_expires_at', type: 'timestamptz', nullable: true })
  previousSecretExpiresAt: Date | null;

  @Column({ name: 'failing_since', type: 'timestamptz', nullable: true })
  failingSince: Date | null;
}
