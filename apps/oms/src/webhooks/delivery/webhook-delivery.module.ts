import { Module } from '@nestjs/common';
import { isForbiddenAddress, safeLookup } from '@tracking/webhooks';
import type { OmsConfig } from '../../config.js';
import { OMS_CONFIG } from '../../tokens.js';
import { DeliveryMetrics } from './delivery-metrics.js';
import { DeliveryRetention } from './delivery-retention.js';
import { DeliveryRepository } from './delivery.repository.js';
import { WebhookDispatchConsumer } from './webhook-dispatch.consumer.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WebhookClient } from './webhook-request.js';
import { WebhookSender } from './webhook-sender.js';

/**
 * Webhook delivery, in the worker process (apps/oms/src/worker.ts): the dispatch consumer of
 * the events stream and the sender. Connections resolve through the SSRF policy's `safeLookup`, so a name
 * that resolves to a forbidden address at delivery time fails the attempt (`ForbiddenAddress`).
 */
@Module({
  providers: [
    DeliveryRepository,
    DeliveryMetrics,
    WebhookSender,
    DeliveryRetention,
    WebhookDispatcher,
    WebhookDispatchConsumer,
    {
      provide: WebhookClient,
      inject: [OMS_CONFIG],
      useFactory: ({ WEBHOOK_TIMEOUT_MS: timeoutMs, WEBHOOK_ALLOW_PRIVATE_NETWORKS: allowPrivateNetworks }: OmsConfig) =>
        new WebhookClient({ timeoutMs, lookup: safeLookup({ allowPrivateNetworks }), isForbiddenLiteral: (address) => isForbiddenAddress(address, { allowPrivateNetworks }) }),
    },
  ],
  exports: [WebhookDispatcher],
})
export class WebhookDeliveryModule {}
