import type { DeliveryAttempt, DeliveryStatus } from '@tracking/contracts';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One event for one webhook, with its attempts (migration 1763800012000-create-webhooks.ts). */
@Entity({ name: 'webhook_deliveries' })
export class WebhookDeliveryEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  /** Commit-ordered position among the webhook's deliveries; a string because it is a bigint. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId: string;

  @Column({ name: 'webhook_id', type: 'uuid' })
  webhookId: string;

  @Column({ name: 'event_id', type: 'uuid' })
  eventId: string;

  @Column({ name: 'event_type', type: 'text' })
  eventType: string;

  /** The request body, exactly as every attempt sends it. */
  @Column({ type: 'text' })
  payload: string;

  @Column({ type: 'text' })
  status: DeliveryStatus;

  @Column({ type: 'jsonb' })
  attempts: DeliveryAttempt[];

  /** Every attempt ever made, also those the log no longer keeps (it keeps the last ATTEMPT_LOG_LENGTH). */
  @Column({ name: 'attempts_total', type: 'integer', default: 0 })
  attemptsTotal: number;

  /** Attempts of the current retry schedule (a redeliver starts it again). */
  @Column({ name: 'attempt_count', type: 'integer' })
  attemptCount: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', nullable: true })
  nextAttemptAt: Date | null;

  @Column({ name: 'lease_until', type: 'timestamptz', nullable: true })
  leaseUntil: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
