import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { type EventEnvelope, jetStreamName } from '@tracking/contracts';
import type { Logger } from '@tracking/core';
import { AdvisoryLeader, DurableConsumer, eventsStreamSettings, JETSTREAM_CONNECTION } from '@tracking/outbox';
import type { OmsConfig } from '../config.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';
import { decodeEventEnvelope } from './event-envelope.js';
import { EventRepository } from './event.repository.js';

/**
 * Fills the feed from the events stream: the durable consumer `<PREFIX>events-feed`, each batch stored in
 * one transaction and acknowledged after it commits. One OMS replica at a time consumes (the others
 * stand by, under an advisory lock): one process handing out batches in stream order is what keeps the
 * feed in the order the events were published (a `shipment.created` before its `shipment.started`),
 * which replicas sharing the consumer would not. After a takeover, messages the dead leader held come
 * again after the consumer's ack wait, behind newer ones: the one case where the feed's order departs
 * from the stream's.
 */
@Injectable()
export class EventFeedConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private leader: AdvisoryLeader | undefined;

  constructor(
    private readonly events: EventRepository,
    @Inject(JETSTREAM_CONNECTION) private readonly nats: NatsConnection,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.leader = new AdvisoryLeader({
      databaseUrl: this.config.OMS_DATABASE_URL,
      lock: 'events-feed',
      logger: this.logger,
      lead: async () => {
        const consumer = this.consumer();
        consumer.start();
        return consumer;
      },
    });
    this.leader.start();
  }

  private consumer(): DurableConsumer<EventEnvelope> {
    return new DurableConsumer<EventEnvelope>({
      nats: this.nats,
      stream: eventsStreamSettings(this.config),
      durable: jetStreamName(this.config.NATS_SUBJECT_PREFIX, 'events-feed'),
      decode: decodeEventEnvelope,
      handle: async (batch) => {
        await this.events.store(batch);
      },
      logger: this.logger,
    });
  }

  async onModuleDestroy(): Promise<void> {
    await this.leader?.stop();
  }
}
