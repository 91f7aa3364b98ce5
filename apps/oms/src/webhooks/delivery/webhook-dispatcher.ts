import { Inject, Injectable } from '@nestjs/common';
import type { EventEnvelope } from '@tracking/contracts';
import type { OmsConfig } from '../../config.js';
import { OMS_CONFIG } from '../../tokens.js';
import { DeliveryMetrics } from './delivery-metrics.js';
import { DeliveryRepository } from './delivery.repository.js';

/** Turns events into webhook deliveries. */
@Injectable()
export class WebhookDispatcher {
  constructor(
    private readonly deliveries: DeliveryRepository,
    private readonly metrics: DeliveryMetrics,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
  ) {}

  /**
   * One Pending delivery per event and target URL of the event's account (the oldest Active webhook
   * naming that URL and taking the type), in one transaction for the batch; idempotent (an event reaches
   * a webhook once, however often it comes). The account's budget of the hour
   * (`WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR`) bounds how many are sent: the rest are recorded Failed,
   * unsent (docs/webhook-delivery.md, "Amplification bounds"). The commit wakes every worker's sender.
   */
  async dispatchEvents(events: readonly EventEnvelope[]): Promise<number> {
    const result = await this.deliveries.dispatch(events, this.config.WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR);
    this.metrics.deliveriesDispatched(result.created);
    if (result.unsent > 0) this.metrics.deliveriesOverBudget(result.unsent);
    return result.created;
  }
}
