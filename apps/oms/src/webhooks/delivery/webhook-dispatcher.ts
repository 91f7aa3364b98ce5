import { Inject, Injectable } from '@nestjs/common';
import type { EventEnvelope } from '@tracking/contracts';
import type { OmsConfig } from '../../config.js';
import { OMS_CONFIG } from '../../tokens.js';
import { DeliveryEngine } from './delivery-engine.js';
import { DeliveryMetrics } from './delivery-metrics.js';
import { DeliveryRepository } from './delivery.repository.js';

/** Turns events into webhook deliveries. */
@Injectable()
export class WebhookDispatcher {
  constructor(
    private readonly deliveries: DeliveryRepository,
    private readonly engine: DeliveryEngine,
    private readonly metrics: DeliveryMetrics,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
  ) {}

  /**
   * One Pending delivery per event and target URL of the event's account (the oldest Active webhook
   * naming that URL and taking the type), in one transaction for the batch; idempotent (an event reaches
   * a webhook once, however often it comes). The account's budget of the hour
   * (`WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR`) bounds how many are sent: the rest are recorded Failed,
   * unsent (docs/webhook-delivery.md, "Amplification bounds").
   * The deliveries this process's sender has room for are leased to it in the same transaction and sent
   * right after the commit; it is woken for the rest.
   */
  async dispatchEvents(events: readonly EventEnvelope[]): Promise<number> {
    const result = await this.deliveries.dispatch(events, this.engine.dispatchTake, this.config.WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR);
    this.engine.sendClaimed(result.claimed);
    this.metrics.deliveriesDispatched(result.created);
    if (result.unsent > 0) this.metrics.deliveriesOverBudget(result.unsent);
    // What did not fit in this sender's free places waits, due now, for any sender's claim.
    if (result.created > result.claimed.length) this.engine.wake();
    return result.created;
  }
}
