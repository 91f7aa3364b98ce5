import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from '@tracking/core';
import { PgListener } from '@tracking/database';
import { nextAttemptDelay, parseRetryAfter } from '@tracking/webhooks';
import type { OmsConfig } from '../../config.js';
import { OMS_CONFIG, OMS_LOGGER } from '../../tokens.js';
import { DeliveryMetrics } from './delivery-metrics.js';
import { type AttemptOutcome, type ClaimedDelivery, DeliveryRepository } from './delivery.repository.js';
import { WebhookClient } from './webhook-request.js';

/** Notified when a delivery becomes due now (trigger of migration 1763800031000-notify-due-deliveries). */
export const DUE_CHANNEL = 'webhook_deliveries_due';
/** How long to wait before recording an outcome again after the database failed. */
const RECORD_RETRY_MS = 1000;

/**
 * Sends webhook deliveries (docs/webhook-delivery.md, "Sending"), one per worker process. Woken, it claims
 * due deliveries under a lease, as many as its limiters have free slots (p-limit: `WEBHOOK_CONCURRENCY`
 * in all, `WEBHOOK_CONCURRENCY_PER_WEBHOOK` per webhook), sends each and records its outcome. Woken by a
 * delivery made due anywhere (PostgreSQL's notification), an attempt's end, a claim that filled every
 * free slot, and every `WEBHOOK_POLL_INTERVAL_MS` (retries falling due, killed workers' leases lapsing).
 */
@Injectable()
export class WebhookSender implements OnApplicationBootstrap, OnApplicationShutdown {
  /** One claim at a time: a wake-up while one runs queues the next. */
  private readonly claims = pLimit(1);
  private readonly overall = pLimit(this.config.WEBHOOK_CONCURRENCY);
  private readonly perWebhook = new Map<string, LimitFunction>();
  private readonly attempts = new Set<Promise<void>>();
  private listener: PgListener | undefined;
  private poll: NodeJS.Timeout | undefined;
  private stopped = true;

  constructor(
    private readonly deliveries: DeliveryRepository,
    private readonly metrics: DeliveryMetrics,
    private readonly client: WebhookClient,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.WEBHOOK_SENDER_ENABLED) return;
    this.stopped = false;
    // It wakes the sender when connected, and after each reconnection (notifications meanwhile are lost).
    this.listener = new PgListener({ databaseUrl: this.config.OMS_DATABASE_URL, channel: DUE_CHANNEL, onNotify: () => this.wake(), logger: this.logger });
    this.listener.start();
    this.poll = setInterval(() => this.wake(), this.config.WEBHOOK_POLL_INTERVAL_MS).unref();
  }

  /**
   * Claims due deliveries soon. No wake-up is lost: a claim that has not started yet reads the table after
   * whatever caused this one, so one waiting is enough; otherwise this one queues behind the running claim.
   */
  wake(): void {
    if (this.stopped || this.claims.pendingCount > 0) return;
    void this.claims(() => this.claimAndSend());
  }

  private async claimAndSend(): Promise<void> {
    if (this.stopped) return;
    // A webhook's limiter lives while it has attempts (p-limit keeps no key of its own).
    for (const [webhookId, limit] of this.perWebhook) if (limit.activeCount === 0 && limit.pendingCount === 0) this.perWebhook.delete(webhookId);
    const free = this.config.WEBHOOK_CONCURRENCY - this.attempts.size;
    if (free <= 0) return; // the next attempt to end wakes the sender
    const busy = new Map([...this.perWebhook].map(([webhookId, limit]) => [webhookId, limit.activeCount + limit.pendingCount]));
    const claimed = await this.deliveries.claim(free, this.config.WEBHOOK_CONCURRENCY_PER_WEBHOOK, busy, this.config.WEBHOOK_LEASE_MS).catch((error: unknown) => {
      this.logger.warn({ err: error }, 'could not claim webhook deliveries; trying again at the next poll');
      return [];
    });
    for (const delivery of claimed) this.start(delivery);
    if (claimed.length === free) this.wake();
  }

  /** Claimed deliveries fit the free slots, so both limiters start them at once. */
  private start(delivery: ClaimedDelivery): void {
    let limit = this.perWebhook.get(delivery.webhookId);
    if (!limit) this.perWebhook.set(delivery.webhookId, (limit = pLimit(this.config.WEBHOOK_CONCURRENCY_PER_WEBHOOK)));
    const attempt = limit(() => this.overall(() => this.attempt(delivery)));
    this.attempts.add(attempt);
    // p-limit counts an attempt out before the promise it returned settles (webhook-sender.spec.ts), so the
    // claim this wake-up makes sees the slot free.
    void attempt.finally(() => {
      this.attempts.delete(attempt);
      this.wake();
    });
  }

  /** Sends the delivery and records the outcome; never throws. */
  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    this.metrics.attemptStarted();
    const at = new Date().toISOString();
    const result = await this.client.send(delivery.url, delivery.eventId, delivery.payload, delivery);
    this.metrics.attemptEnded(result);
    const retryAfter = parseRetryAfter(result.retryAfter, Date.now());
    const retryInMs = result.ok ? null : nextAttemptDelay(this.config.WEBHOOK_RETRY_SCHEDULE, delivery.attemptCount + 1, retryAfter);
    if (result.ok) this.metrics.settled('succeeded', delivery.payload);
    else if (retryInMs === null) this.metrics.settled('failed');
    const attempt = { at, statusCode: result.statusCode, durationMs: result.durationMs, error: result.error };
    await this.record({ deliveryId: delivery.id, webhookId: delivery.webhookId, leaseUntil: delivery.leaseUntil, attempt, succeeded: result.ok, retryInMs });
  }

  /**
   * Records an outcome, again every second while the database fails (the lease keeps the delivery meanwhile;
   * at shutdown it is left to lapse). One PostgreSQL refuses for its data (SQLSTATE classes 22, 23, 54) is
   * quarantined: recorded without its error text or, refused even so, dropped (sent again after its lease).
   */
  private async record(outcome: AttemptOutcome, quarantined = false): Promise<void> {
    const ids = { deliveryId: outcome.deliveryId, webhookId: outcome.webhookId };
    try {
      const disabled = await this.deliveries.recordOutcome(outcome, this.config.WEBHOOK_DISABLE_AFTER_MS);
      if (quarantined) this.metrics.outcomeQuarantined('stored_without_detail');
      if (disabled) this.metrics.webhooksDisabled(1);
      if (disabled) this.logger.warn({ webhookId: disabled.id, failingSince: disabled.failingSince }, 'webhook disabled after failing');
    } catch (error) {
      const { code } = ((error as { driverError?: unknown }).driverError ?? error) as { code?: string };
      if (quarantined && /^(22|23|54)/.test(code ?? '')) {
        this.logger.error({ err: error, ...ids }, 'webhook delivery attempt dropped: the database refused it even without detail');
        return this.metrics.outcomeQuarantined('dropped');
      }
      if (/^(22|23|54)/.test(code ?? '')) {
        this.logger.error({ err: error, ...ids }, 'webhook delivery attempt refused by the database; quarantined');
        return this.record({ ...outcome, attempt: { ...outcome.attempt, error: `the outcome could not be stored (SQLSTATE ${code})` } }, true);
      }
      this.logger.warn({ err: error, ...ids }, 'could not record a webhook delivery attempt; retrying');
      if (this.stopped) return;
      await sleep(RECORD_RETRY_MS);
      return this.record(outcome, quarantined);
    }
  }

  /** Stops claiming, lets the attempts in flight end (within WEBHOOK_TIMEOUT_MS) and records them. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.poll);
    await this.listener?.close();
    await this.claims(() => undefined);
    await Promise.all(this.attempts);
    this.client.close();
  }
}
