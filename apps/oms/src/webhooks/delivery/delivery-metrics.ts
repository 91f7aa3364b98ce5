import { Injectable } from '@nestjs/common';
import { ServiceMetrics } from '@tracking/observability';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { AttemptResult } from './webhook-request.js';

/** How a delivery settled. */
export type DeliveryOutcome = 'succeeded' | 'failed';

/** What became of an attempt's outcome the database refused (WebhookSender.record). */
export type QuarantineAction = 'stored_without_detail' | 'dropped';

/** Webhook delivery's metrics (docs/webhook-delivery.md, "What to alert on"). */
@Injectable()
export class DeliveryMetrics {
  private readonly deliveries: Counter<'outcome'>;
  private readonly attempts: Counter<'outcome'>;
  private readonly attemptDuration: Histogram<'outcome'>;
  private readonly latency: Histogram;
  private readonly inFlight: Gauge;
  private readonly disabled: Counter;
  private readonly dispatched: Counter;
  private readonly quarantined: Counter<'action'>;
  private readonly overBudget: Counter;

  constructor(metrics: ServiceMetrics) {
    const registers = [metrics.registry];
    this.deliveries = new Counter({
      name: 'webhook_deliveries_total',
      help: 'Deliveries this worker settled, by outcome: succeeded (a 2xx), failed (the retry schedule ran out).',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.attempts = new Counter({
      name: 'webhook_delivery_attempts_total',
      help: 'Delivery attempts this worker made, by outcome: success, http_error (not 2xx), timeout, network_error, forbidden_address (SSRF policy).',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.attemptDuration = new Histogram({
      name: 'webhook_delivery_attempt_duration_seconds',
      help: 'One delivery attempt, from the request to the answer or the failure, by outcome.',
      labelNames: ['outcome'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.latency = new Histogram({
      name: 'webhook_delivery_latency_seconds',
      help: "From the event's occurredAt to the receiver's 2xx, retries included.",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 36000, 129600],
      registers,
    });
    this.inFlight = new Gauge({ name: 'webhook_deliveries_in_flight', help: 'Delivery attempts this worker has in flight now.', registers });
    this.disabled = new Counter({ name: 'webhooks_disabled_total', help: 'Webhooks this worker disabled after failing for WEBHOOK_DISABLE_AFTER_MS.', registers });
    this.dispatched = new Counter({ name: 'webhook_deliveries_dispatched_total', help: 'Deliveries created from events of the stream by this worker.', registers });
    this.quarantined = new Counter({
      name: 'webhook_delivery_outcomes_quarantined_total',
      help: 'Attempt outcomes the database refused to store, by action: stored_without_detail (recorded without the error text), dropped (not recorded; the delivery is sent again after its lease).',
      labelNames: ['action'] as const,
      registers,
    });
    for (const action of ['stored_without_detail', 'dropped'] satisfies QuarantineAction[]) this.quarantined.inc({ action }, 0);
    this.overBudget = new Counter({
      name: 'webhook_deliveries_over_budget_total',
      help: "Deliveries recorded Failed without being sent: their account's WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR was spent.",
      registers,
    });
    for (const outcome of ['succeeded', 'failed'] satisfies DeliveryOutcome[]) this.deliveries.inc({ outcome }, 0);
    for (const outcome of ['success', 'http_error', 'timeout', 'network_error', 'forbidden_address'] satisfies AttemptResult['kind'][]) {
      this.attempts.inc({ outcome }, 0);
    }
  }

  attemptStarted(): void {
    this.inFlight.inc();
  }

  attemptEnded(result: AttemptResult): void {
    this.inFlight.dec();
    this.attempts.inc({ outcome: result.kind });
    this.attemptDuration.observe({ outcome: result.kind }, result.durationMs / 1000);
  }

  /** A delivery settled; `payload` (the event's JSON) gives a success's latency from the event's `occurredAt`. */
  settled(outcome: DeliveryOutcome, payload?: string): void {
    this.deliveries.inc({ outcome });
    const occurredAt = outcome === 'succeeded' && payload !== undefined ? occurredAtOf(payload) : undefined;
    if (occurredAt !== undefined && Number.isFinite(occurredAt)) this.latency.observe(Math.max(0, Date.now() - occurredAt) / 1000);
  }

  webhooksDisabled(count: number): void {
    this.disabled.inc(count);
  }

  outcomeQuarantined(action: QuarantineAction): void {
    this.quarantined.inc({ action });
  }

  deliveriesDispatched(count: number): void {
    this.dispatched.inc(count);
  }

  deliveriesOverBudget(count: number): void {
    this.overBudget.inc(count);
  }
}

function occurredAtOf(payload: string): number | undefined {
  try {
    return Date.parse((JSON.parse(payload) as { occurredAt: string }).occurredAt);
  } catch {
    return undefined;
  }
}
