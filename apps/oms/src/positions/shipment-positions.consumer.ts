import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetStreamName } from '@tracking/contracts';
import type { Logger } from '@tracking/core';
import { DurableConsumer, JETSTREAM_CONNECTION, readingsStreamSettings } from '@tracking/outbox';
import type { OmsConfig } from '../config.js';
import { type LastPosition, ShipmentRepository } from '../shipments/shipment.repository.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';
import { decodePositions } from '../evaluation/readings-message.js';

/**
 * Keeps each shipment's `lastPosition` from the readings stream: the durable consumer
 * `<PREFIX>shipment-positions`, shared by the OMS replicas (any of them may handle any batch: the update
 * keeps the newest position whatever the order, and a batch handled twice changes nothing). A batch's
 * positions land within a consumer round trip of its commit in the DMS; a replica that dies leaves its
 * unacknowledged batches to the others after the ack wait.
 */
@Injectable()
export class ShipmentPositionsConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private consumer: DurableConsumer<LastPosition[]> | undefined;

  constructor(
    private readonly shipments: ShipmentRepository,
    @Inject(JETSTREAM_CONNECTION) private readonly nats: NatsConnection,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.consumer = new DurableConsumer<LastPosition[]>({
      nats: this.nats,
      stream: readingsStreamSettings(this.config),
      durable: jetStreamName(this.config.NATS_SUBJECT_PREFIX, 'shipment-positions'),
      decode: decodePositions,
      handle: (batch) => this.shipments.moveLastPositions(newestPerShipment(batch.flat())),
      logger: this.logger,
    });
    this.consumer.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.consumer?.stop();
  }
}

/** The newest position of each shipment (ties by device id, as the update compares them). */
export function newestPerShipment(positions: LastPosition[]): LastPosition[] {
  const newest = new Map<string, LastPosition>();
  for (const position of positions) {
    const held = newest.get(position.shipmentId);
    if (!held || position.recordedAt > held.recordedAt || (position.recordedAt === held.recordedAt && position.deviceId > held.deviceId)) {
      newest.set(position.shipmentId, position);
    }
  }
  return [...newest.values()];
}
