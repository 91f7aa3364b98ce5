import { Module } from '@nestjs/common';
import { safeLookup } from '@tracking/webhooks';
import type { OmsConfig } from '../../config.js';
import { OMS_CONFIG } from '../../tokens.js';
import { DeliveryEngine, WEBHOOK_LOOKUP } from './delivery-engine.js';
import { DeliveryMetrics } from './delivery-metrics.js';
import { DeliveryRetention } from './delivery-retention.js';
import { DeliveryRepository } from './delivery.repository.js';
import { WebhookDispatchConsumer } from './webhook-dispatch.consumer.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';

/**
 * The webhook delivery engine, in the worker process (apps/oms/src/worker.ts): the dispatch consumer of
 * the events stream and the sender. Connections resolve through the SSRF policy's `safeLookup`, so a name
 * that resolves to a forbidden address at delivery time fails the attempt (`ForbiddenAddress`).
 */
@Module({
  providers: [
    DeliveryRepository,
    DeliveryMetrics,
    DeliveryEngine,
    DeliveryRetention,
    WebhookDispatcher,
    WebhookDispatchConsumer,
    {
      provide: WEBHOOK_LOOKUP,
      inject: [OMS_CONFIG],
      useFactory: (config: OmsConfig) => safeLookup({ allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS }),
    },
  ],
  exports: [WebhookDispatcher, DeliveryEngine],
})
export class WebhookDeliveryModule {}
