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
  /** Outcomes waiting for the recorder, which writes one batch at a time (the speed table in docs/architecture.md). */
  private readonly outcomes: AttemptOutcome[] = [];
  private readonly recorder = pLimit(1);
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
    const busy = new Map<string, number>();
    for (const [webhookId, limit] of this.perWebhook) {
      // A webhook's limiter lives while it has attempts (p-limit keeps no key of its own).
      if (limit.activeCount + limit.pendingCount === 0) this.perWebhook.delete(webhookId);
      else busy.set(webhookId, limit.activeCount + limit.pendingCount);
    }
    const free = this.config.WEBHOOK_CONCURRENCY - [...busy.values()].reduce((sum, n) => sum + n, 0);
    if (free <= 0) return; // the next attempt to end wakes the sender
    const claimed = await this.deliveries.claim(free, this.config.WEBHOOK_CONCURRENCY_PER_WEBHOOK, busy, this.config.WEBHOOK_LEASE_MS).catch((error: unknown) => {
      this.logger.warn({ err: error }, 'could not claim webhook deliveries; trying again at the next poll');
      return [];
    });
    for (const delivery of claimed) this.start(delivery);
    if (claimed.length === free) this.wake();
  }

  /**
   * Claimed deliveries fit the free slots, so both limiters start them at once. A slot is held for the
   * request; its end wakes the sender, then the outcome is recorded (under the lease).
   */
  private start(delivery: ClaimedDelivery): void {
    let limit = this.perWebhook.get(delivery.webhookId);
    if (!limit) this.perWebhook.set(delivery.webhookId, (limit = pLimit(this.config.WEBHOOK_CONCURRENCY_PER_WEBHOOK)));
    // p-limit counts a request out before the promise it returned settles (webhook-sender.spec.ts), so the
    // claim this wake-up makes sees the slot free.
    const attempt = limit(() => this.overall(() => this.send(delivery))).then(
      (outcome) => {
        this.outcomes.push(outcome);
        if (this.recorder.pendingCount === 0) void this.recorder(() => this.record());
        this.wake();
      },
      (error: unknown) => this.logger.error({ err: error, deliveryId: delivery.id }, 'webhook delivery attempt failed unexpectedly; its lease will lapse'),
    );
    this.attempts.add(attempt);
    void attempt.finally(() => this.attempts.delete(attempt));
  }

  private async send(delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    this.metrics.attemptStarted();
    const at = new Date().toISOString();
    const result = await this.client.send(delivery.url, delivery.eventId, delivery.payload, delivery);
    this.metrics.attemptEnded(result);
    const { ok, statusCode, durationMs, error } = result;
    const retryInMs = ok ? null : nextAttemptDelay(this.config.WEBHOOK_RETRY_SCHEDULE, delivery.attemptCount + 1, parseRetryAfter(result.retryAfter, Date.now()));
    if (retryInMs === null) this.metrics.settled(ok ? 'succeeded' : 'failed', delivery.payload);
    return { deliveryId: delivery.id, webhookId: delivery.webhookId, leaseUntil: delivery.leaseUntil, attempt: { at, statusCode, durationMs, error }, succeeded: ok, retryInMs };
  }

  /**
   * Records the outcomes gathered so far in one statement; those of attempts that end meanwhile wait for the
   * next. The database failing, they are kept and tried again a second later (their leases keep the
   * deliveries; at shutdown they are left to lapse). A batch PostgreSQL refuses for its data (SQLSTATE
   * classes 22, 23, 54) is recorded one outcome at a time, and the one it refuses is quarantined: recorded
   * without its error text or, refused even so, dropped (sent again after its lease).
   */
  private async record(batch = this.outcomes.splice(0), quarantined = false): Promise<void> {
    if (batch.length === 0) return;
    try {
      const disabled = await this.deliveries.recordOutcomes(batch, this.config.WEBHOOK_DISABLE_AFTER_MS);
      if (quarantined) this.metrics.outcomeQuarantined('stored_without_detail');
      this.metrics.webhooksDisabled(disabled.length);
      for (const webhook of disabled) this.logger.warn({ webhookId: webhook.id, failingSince: webhook.failingSince }, 'webhook disabled after failing');
    } catch (error) {
      const { code } = ((error as { driverError?: unknown }).driverError ?? error) as { code?: string };
      if (!/^(22|23|54)/.test(code ?? '')) {
        this.logger.warn({ err: error, outcomes: batch.length }, 'could not record webhook delivery attempts; retrying');
        if (this.stopped) return;
        this.outcomes.unshift(...batch);
        await sleep(1000);
        return void this.recorder(() => this.record());
      }
      const [alone] = batch;
      if (batch.length > 1 || !alone) {
        for (const outcome of batch) await this.record([outcome]);
        return;
      }
      const what = quarantined ? 'dropped: the database refused it even without detail' : 'refused by the database; quarantined';
      this.logger.error({ err: error, deliveryId: alone.deliveryId, webhookId: alone.webhookId }, `webhook delivery attempt ${what}`);
      if (quarantined) return this.metrics.outcomeQuarantined('dropped');
      return this.record([{ ...alone, attempt: { ...alone.attempt, error: `the outcome could not be stored (SQLSTATE ${code})` } }], true);
    }
  }

  /** Stops claiming, lets the attempts in flight end (within WEBHOOK_TIMEOUT_MS) and records them. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.poll);
    await this.listener?.close();
    await this.claims(() => undefined);
    await Promise.all(this.attempts);
    await this.recorder(() => undefined);
    this.client.close();
  }
}
