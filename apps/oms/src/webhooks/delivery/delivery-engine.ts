import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { LookupFunction } from 'node:net';
import type { Logger } from '@tracking/core';
import { isForbiddenAddress, nextAttemptDelay, parseRetryAfter } from '@tracking/webhooks';
import type { OmsConfig } from '../../config.js';
import { OMS_CONFIG, OMS_LOGGER } from '../../tokens.js';
import { DeliveryMetrics } from './delivery-metrics.js';
import { type AttemptOutcome, type ClaimedDelivery, DeliveryRepository, type DispatchTake } from './delivery.repository.js';
import { WebhookClient } from './webhook-request.js';

/** The connection lookup of webhook requests (the SSRF policy's `safeLookup`; see webhook-delivery.module.ts). */
export const WEBHOOK_LOOKUP = Symbol('WEBHOOK_LOOKUP');

/** The most deliveries one claim statement takes. */
const CLAIM_BATCH = 200;
/** The most outcomes one recording transaction writes. */
const OUTCOME_BATCH = 500;
/** How long to wait before recording outcomes again after the database refused. */
const RECORD_RETRY_MS = 1000;
/** Time an attempt's outcome needs to be recorded after its timeout, within the lease. */
const LEASE_MARGIN_MS = 2000;

/**
 * How many rounds of attempts a held delivery may wait for a slot of its webhook and still end within its
 * lease: each round can take a full timeout (a receiver that never answers), and the delivery's own attempt
 * and its record need one more. With the defaults (60 s lease, 10 s timeout) 4: a sender holds up to 5 ×
 * the per-webhook cap of one webhook, so that a burst goes out without a claim statement per slot.
 */
export function waitingRounds(leaseMs: number, timeoutMs: number): number {
  return Math.max(0, Math.floor((leaseMs - LEASE_MARGIN_MS) / timeoutMs) - 1);
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left <= 0) counts.delete(key);
  else counts.set(key, left);
}

/**
 * Sends webhook deliveries (docs/webhook-delivery.md). Any number of worker processes run one each: they
 * share the due deliveries through PostgreSQL (claims with `FOR UPDATE SKIP LOCKED` and a lease), so a
 * killed worker's claims are sent by another once their lease lapses.
 *
 * At most WEBHOOK_CONCURRENCY requests are in flight per process, and at most
 * WEBHOOK_CONCURRENCY_PER_WEBHOOK to one webhook, so a receiver that never answers holds a few slots for
 * WEBHOOK_TIMEOUT_MS each, and every other webhook's deliveries keep theirs. A sender may hold a few rounds
 * more than its slots (`waitingRounds`), each webhook's in its own queue, so that bursts need few claims.
 * Outcomes are recorded in batches: one transaction for all the attempts that ended while the last one ran.
 */
@Injectable()
export class DeliveryEngine implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly client: WebhookClient;
  /** Deliveries this sender holds (leased to it), in flight or waiting for a slot, per webhook and in all. */
  private readonly held = new Map<string, number>();
  private heldTotal = 0;
  /** Attempts in flight, per webhook and in all. */
  private readonly active = new Map<string, number>();
  private activeTotal = 0;
  /** Held deliveries waiting for a slot, per webhook (oldest first). */
  private readonly waiting = new Map<string, ClaimedDelivery[]>();
  private readonly holdPerWebhook: number;
  private readonly holdTotal: number;
  private readonly sending = new Set<Promise<void>>();
  private claiming = false;
  /** A claim was asked for (woken, or the last claim was full) and not made yet. */
  private wanted = false;
  /** More may be due than the last claim took (it was full, or it filled a webhook's share): an ending attempt claims again. */
  private moreDue = false;
  private stopped = true;
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly outcomes: AttemptOutcome[] = [];
  private recording: Promise<void> | undefined;

  constructor(
    private readonly deliveries: DeliveryRepository,
    private readonly metrics: DeliveryMetrics,
    @Inject(WEBHOOK_LOOKUP) lookup: LookupFunction,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {
    this.client = new WebhookClient({
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      lookup,
      isForbiddenLiteral: (address) => isForbiddenAddress(address, { allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS }),
    });
    const rounds = waitingRounds(config.WEBHOOK_LEASE_MS, config.WEBHOOK_TIMEOUT_MS);
    this.holdPerWebhook = config.WEBHOOK_CONCURRENCY_PER_WEBHOOK * (1 + rounds);
    this.holdTotal = config.WEBHOOK_CONCURRENCY * (1 + rounds);
  }

  onApplicationBootstrap(): void {
    if (!this.config.WEBHOOK_SENDER_ENABLED) return;
    this.stopped = false;
    this.pollTimer = setInterval(() => this.wake(), this.config.WEBHOOK_POLL_INTERVAL_MS);
    this.pollTimer.unref();
    this.wake();
  }

  /** Looks for due deliveries now (after a dispatch committed, or a timer). */
  wake(): void {
    this.wanted = true;
    void this.pump();
  }

  private async pump(): Promise<void> {
    if (this.claiming || this.stopped) return;
    this.claiming = true;
    try {
      while (this.wanted && !this.stopped) {
        this.wanted = false;
        const free = this.holdTotal - this.heldTotal;
        if (free <= 0) {
          this.moreDue = true;
          break;
        }
        const limit = Math.min(free, CLAIM_BATCH);
        const claimed = await this.deliveries.claim(limit, this.holdPerWebhook, this.held, this.config.WEBHOOK_LEASE_MS);
        if (this.stopped) {
          await this.deliveries.release(claimed);
          break;
        }
        for (const delivery of claimed) {
          this.hold(delivery.webhookId);
          this.enqueue(delivery);
        }
        const full = claimed.length === limit;
        // A webhook the claim filled to its share may have more due: claim again when one of its attempts ends.
        const capped = claimed.some((d) => (this.held.get(d.webhookId) ?? 0) >= this.holdPerWebhook);
        this.moreDue = full || capped;
        if (full) this.wanted = true;
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'could not claim webhook deliveries; retrying at the next poll');
    } finally {
      this.claiming = false;
    }
  }

  /**
   * Places for a dispatch to hand new deliveries straight to this sender (`DeliveryRepository.dispatch`):
   * a place is held under both limits until `sendClaimed` fills it or `giveBack` returns it.
   */
  readonly dispatchTake: DispatchTake = {
    take: (webhookId) => {
      if (this.stopped || this.heldTotal >= this.holdTotal || (this.held.get(webhookId) ?? 0) >= this.holdPerWebhook) return false;
      this.hold(webhookId);
      return true;
    },
    giveBack: (webhookId) => this.unhold(webhookId),
    leaseMs: this.config.WEBHOOK_LEASE_MS,
  };

  /** Sends deliveries a dispatch leased to this sender, in the places `dispatchTake` held for them. */
  sendClaimed(claims: readonly ClaimedDelivery[]): void {
    for (const delivery of claims) this.enqueue(delivery);
  }

  private hold(webhookId: string): void {
    this.heldTotal++;
    this.held.set(webhookId, (this.held.get(webhookId) ?? 0) + 1);
  }

  private unhold(webhookId: string): void {
    this.heldTotal--;
    decrement(this.held, webhookId);
  }

  private enqueue(delivery: ClaimedDelivery): void {
    const queue = this.waiting.get(delivery.webhookId);
    if (queue) queue.push(delivery);
    else this.waiting.set(delivery.webhookId, [delivery]);
    this.startWaiting();
  }

  /** Starts waiting deliveries while slots are free, taking the webhooks in turn. */
  private startWaiting(): void {
    let started = true;
    while (started && this.activeTotal < this.config.WEBHOOK_CONCURRENCY) {
      started = false;
      for (const [webhookId, queue] of this.waiting) {
        if (this.activeTotal >= this.config.WEBHOOK_CONCURRENCY) break;
        if ((this.active.get(webhookId) ?? 0) >= this.config.WEBHOOK_CONCURRENCY_PER_WEBHOOK) continue;
        const delivery = queue.shift();
        if (queue.length === 0) this.waiting.delete(webhookId);
        if (!delivery) continue;
        started = true;
        // Held past the point where it could end within its lease: given back unsent (a lease left to lapse
        // would read as an attempt whose outcome is unknown), to be claimed again.
        if (Date.parse(delivery.leaseUntil) - Date.now() < this.config.WEBHOOK_TIMEOUT_MS) {
          this.unhold(webhookId);
          this.deliveries.release([delivery]).catch((error: unknown) => this.logger.warn({ err: error }, 'could not give back an unsent webhook delivery; its lease will lapse'));
          continue;
        }
        this.send(delivery);
      }
    }
  }

  private send(delivery: ClaimedDelivery): void {
    this.activeTotal++;
    this.active.set(delivery.webhookId, (this.active.get(delivery.webhookId) ?? 0) + 1);
    this.metrics.attemptStarted();
    const at = new Date().toISOString();
    const sending = this.client
      .send(delivery.url, delivery.eventId, delivery.payload, delivery)
      .then((result) => {
        this.metrics.attemptEnded(result);
        const attempt = delivery.attemptCount + 1;
        const retryInMs = result.ok ? null : nextAttemptDelay(this.config.WEBHOOK_RETRY_SCHEDULE, attempt, parseRetryAfter(result.retryAfter, Date.now()));
        this.outcomes.push({
          deliveryId: delivery.id,
          webhookId: delivery.webhookId,
          leaseUntil: delivery.leaseUntil,
          attempt: { at, statusCode: result.statusCode, durationMs: result.durationMs, error: result.error },
          succeeded: result.ok,
          retryInMs,
        });
        if (result.ok) this.metrics.settled('succeeded', occurredAt(delivery.payload));
        else if (retryInMs === null) this.metrics.settled('failed');
        this.record();
      })
      .finally(() => {
        this.activeTotal--;
        decrement(this.active, delivery.webhookId);
        this.unhold(delivery.webhookId);
        this.sending.delete(sending);
        this.startWaiting();
        if (this.moreDue) this.wake();
      });
    this.sending.add(sending);
  }

  /** Records the outcomes gathered so far, one transaction at a time; those that end meanwhile go in the next. */
  private record(): void {
    if (this.recording) return;
    this.recording = (async () => {
      // Let the attempts that end in this turn of the event loop join the batch.
      await new Promise((resolve) => setImmediate(resolve));
      while (this.outcomes.length > 0) {
        const batch = this.outcomes.splice(0, OUTCOME_BATCH);
        const left = await this.recordBatch(batch);
        if (left.length > 0) {
          // Kept and tried again; until then the leases hold the deliveries (and lapse if this lasts).
          this.outcomes.unshift(...left);
          await new Promise((resolve) => setTimeout(resolve, RECORD_RETRY_MS));
          if (this.stopped && this.sending.size === 0) break;
        }
      }
    })().finally(() => {
      this.recording = undefined;
      if (this.outcomes.length > 0 && !this.stopped) this.record();
    });
  }

  /**
   * Records `batch`; returns what is left to record later (the database failed for a reason of its own,
   * e.g. unreachable). When PostgreSQL refuses the data itself (SQLSTATE classes 22, 23, 54), the batch is
   * split in halves and each recorded apart, so that the one outcome it refuses is found and quarantined
   * while every other is recorded: one tenant's answer never holds up another's bookkeeping.
   */
  private async recordBatch(batch: AttemptOutcome[]): Promise<AttemptOutcome[]> {
    try {
      const disabled = await this.deliveries.recordOutcomes(batch, this.config.WEBHOOK_DISABLE_AFTER_MS);
      if (disabled.length > 0) {
        this.metrics.webhooksDisabled(disabled.length);
        for (const webhook of disabled) this.logger.warn({ webhookId: webhook.id, failingSince: webhook.failingSince }, 'webhook disabled after failing');
      }
      return [];
    } catch (error) {
      if (!isRefusedData(error)) {
        this.logger.warn({ err: error, outcomes: batch.length }, 'could not record webhook delivery attempts; retrying');
        return batch;
      }
      const [only] = batch;
      if (batch.length === 1 && only) return this.quarantine(only, error);
      const half = Math.ceil(batch.length / 2);
      const first = await this.recordBatch(batch.slice(0, half));
      if (first.length > 0) return [...first, ...batch.slice(half)];
      return this.recordBatch(batch.slice(half));
    }
  }

  /**
   * An outcome PostgreSQL refused on its own: recorded again without its error text (the attempt and the
   * delivery's state still count), or, refused again, dropped (its lease lapses and the delivery is sent
   * again). Either way counted in `webhook_delivery_outcomes_quarantined_total` and logged at error level.
   */
  private async quarantine(outcome: AttemptOutcome, refusal: unknown): Promise<AttemptOutcome[]> {
    const code = sqlState(refusal);
    this.logger.error({ err: refusal, deliveryId: outcome.deliveryId, webhookId: outcome.webhookId }, 'webhook delivery attempt refused by the database; quarantined');
    const bare: AttemptOutcome = { ...outcome, attempt: { ...outcome.attempt, error: `the outcome could not be stored (SQLSTATE ${code ?? 'unknown'})` } };
    try {
      await this.deliveries.recordOutcomes([bare], this.config.WEBHOOK_DISABLE_AFTER_MS);
      this.metrics.outcomeQuarantined('stored_without_detail');
      return [];
    } catch (error) {
      if (!isRefusedData(error)) return [outcome];
      this.logger.error({ err: error, deliveryId: outcome.deliveryId, webhookId: outcome.webhookId }, 'webhook delivery attempt dropped: the database refused it even without detail');
      this.metrics.outcomeQuarantined('dropped');
      return [];
    }
  }

  /** Stops claiming, lets the attempts in flight end (within WEBHOOK_TIMEOUT_MS) and records them. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    while (this.claiming) await new Promise((resolve) => setTimeout(resolve, 10));
    // Held deliveries not started yet go back at once rather than when their lease lapses.
    const unsent = [...this.waiting.values()].flat();
    this.waiting.clear();
    await this.deliveries.release(unsent).catch((error: unknown) => this.logger.warn({ err: error }, 'could not give back unsent webhook deliveries; their leases will lapse'));
    await Promise.all(this.sending);
    if (this.outcomes.length > 0) this.record();
    await this.recording;
    this.client.close();
  }
}

/** The SQLSTATE of a PostgreSQL error, also when TypeORM wraps it. */
function sqlState(error: unknown): string | undefined {
  for (let current = error, depth = 0; typeof current === 'object' && current !== null && depth < 3; depth++) {
    const { code } = current as { code?: unknown };
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
    current = (current as { driverError?: unknown }).driverError;
  }
  return undefined;
}

/** PostgreSQL refused the data itself (data exception, integrity constraint, program limit), not the moment. */
function isRefusedData(error: unknown): boolean {
  const code = sqlState(error);
  return code !== undefined && ['22', '23', '54'].includes(code.slice(0, 2));
}

function occurredAt(payload: string): number | undefined {
  try {
    return Date.parse((JSON.parse(payload) as { occurredAt: string }).occurredAt);
  } catch {
    return undefined;
  }
}
