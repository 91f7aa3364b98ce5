import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { type EventEnvelope, jetStreamName } from '@tracking/contracts';
import type { Logger } from '@tracking/core';
import { DurableConsumer, eventsStreamSettings, JETSTREAM_CONNECTION, LeaseGroup } from '@tracking/outbox';
import type { OmsConfig } from '../config.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';
import { decodeEventEnvelope } from './event-envelope.js';
import { EventRepository } from './event.repository.js';

/**
 * Fills the feed from the events stream: the durable consumer `<PREFIX>events-feed`, each batch stored in
 * one transaction and acknowledged after it commits. The feed keeps the stream's order (a
 * `shipment.created` before its `shipment.started`), which the OMS recorded, through failures and leader
 * changes:
 * - one OMS replica at a time consumes: the holder of the lease `events-feed` (`LeaseGroup`, the one
 *   "one runner at a time" of the OMS, docs/leases.md); the others stand by, and take over within the
 *   lease's ttl when the holder dies; a replica that cannot renew the lease in time stops taking batches;
 * - the consumer is `ordered`: a batch that fails (its database connection dropped) is tried again before
 *   any later message, and a new leader starts from the first message not acknowledged, so the messages
 *   a dead or deposed leader held come first, not after the ack wait;
 * - an event stored twice (by a deposed leader finishing its last batch and by the new one) is stored
 *   once, by id; the account's insert-order lock makes the two wait for each other.
 */
@Injectable()
export class EventFeedConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private lease: LeaseGroup | undefined;

  constructor(
    private readonly events: EventRepository,
    @Inject(JETSTREAM_CONNECTION) private readonly nats: NatsConnection,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.lease = new LeaseGroup({
      databaseUrl: this.config.OMS_DATABASE_URL,
      group: 'events-feed',
      names: ['events-feed'],
      logger: this.logger,
      ttlMs: this.config.LEASE_TTL_MS,
      heartbeatMs: this.config.LEASE_HEARTBEAT_MS,
      take: () => {
        const consumer = this.consumer();
        consumer.start();
        return consumer;
      },
    });
    await this.lease.start();
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
      ordered: true,
    });
  }

  async onModuleDestroy(): Promise<void> {
    await this.lease?.stop();
  }
}
