import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { type EventEnvelope, EventType, jetStreamName } from '@tracking/contracts';
import type { Logger } from '@tracking/core';
import { DurableConsumer, eventsStreamSettings, JETSTREAM_CONNECTION } from '@tracking/outbox';
import type { OmsConfig } from '../../config.js';
import { decodeEventEnvelope } from '../../events/event-envelope.js';
import { OMS_CONFIG, OMS_LOGGER } from '../../tokens.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';

/**
 * Feeds webhook deliveries from the events stream: the durable consumer `<PREFIX>webhooks`, shared
 * by every worker process (any of them may take a batch: deliveries are not ordered, and the unique
 * (webhook, event) key makes a batch that comes again harmless). A batch is acknowledged after its
 * deliveries commit, so a worker killed in between leaves the batch to another after the ack wait.
 */
@Injectable()
export class WebhookDispatchConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private consumer: DurableConsumer<EventEnvelope> | undefined;

  constructor(
    private readonly dispatcher: WebhookDispatcher,
    @Inject(JETSTREAM_CONNECTION) private readonly nats: NatsConnection,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.WEBHOOK_SENDER_ENABLED) return;
    this.consumer = new DurableConsumer<EventEnvelope>({
      nats: this.nats,
      stream: eventsStreamSettings(this.config),
      durable: jetStreamName(this.config.NATS_SUBJECT_PREFIX, 'webhooks'),
      decode: decodeEventEnvelope,
      handle: async (batch) => {
        // A `webhook.test` event never comes through the stream (test pings are inserted directly); were one to, it reaches no webhook.
        await this.dispatcher.dispatchEvents(batch.filter((envelope) => envelope.event.type !== EventType.WebhookTest));
      },
      logger: this.logger,
      maxBatch: 500,
    });
    this.consumer.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.consumer?.stop();
  }
}
