import { Injectable } from '@nestjs/common';
import type { EventEnvelope } from '@tracking/contracts';
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
  ) {}

  /**
   * One Pending delivery per Active webhook of each event's account that takes its type, in one
   * transaction for the batch; idempotent (an event reaches a webhook once, however often it comes).
   * The deliveries this process's sender has room for are leased to it in the same transaction and sent
   * right after the commit; it is woken for the rest.
   */
  async dispatchEvents(events: readonly EventEnvelope[]): Promise<number> {
    const result = await this.deliveries.dispatch(events, this.engine.dispatchTake);
    this.engine.sendClaimed(result.claimed);
    this.metrics.deliveriesDispatched(result.created);
    // What did not fit in this sender's free places waits, due now, for any sender's claim.
    if (result.created > result.claimed.length) this.engine.wake();
    return result.created;
  }
}
