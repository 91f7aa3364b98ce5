import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { type AccountScope, jetStreamName } from '@tracking/contracts';
import { BoundedSemaphore, type Logger } from '@tracking/core';
import type { PlaceIndex } from '@tracking/geofence';
import { DurableConsumer, JETSTREAM_CONNECTION, readingsStreamSettings } from '@tracking/outbox';
import type { OmsConfig } from '../config.js';
import { decodeShipmentReadings, type ShipmentReadings } from './readings-message.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';
import { PlaceCache } from './place-cache.js';
import { EVALUATION_CHUNK, ShipmentEvaluator } from './shipment-evaluator.js';

/**
 * Feeds the readings stream to the evaluation: the durable consumer `<PREFIX>shipment-evaluation`, shared
 * by the workers. Batches of messages come as they arrive, up to 64 in flight. Each is grouped by
 * shipment and waits until `EVALUATION_DELAY_MS` has passed since the newest receipt in it (the reorder
 * buffer: a burst is evaluated at once), then for the earlier batches of this process that share a
 * shipment with it; its shipments are then evaluated in chunks of `EVALUATION_CHUNK` per transaction,
 * `EVALUATION_CONCURRENCY` chunks at a time over all batches, and its messages acknowledged only then.
 * A batch that fails comes back whole: evaluations are idempotent (a reading evaluated twice is a repeat).
 */
@Injectable()
export class EvaluationConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private consumer: DurableConsumer<ShipmentReadings[]> | undefined;
  private readonly waiting = new Set<{ timer: NodeJS.Timeout; done: () => void }>();
  /** Per shipment, the end of the last batch of this process that evaluates it. */
  private readonly tails = new Map<string, Promise<void>>();
  /** Chunk transactions of this process: at most EVALUATION_CONCURRENCY at once, the others wait their turn. */
  private readonly slots: BoundedSemaphore;

  constructor(
    private readonly evaluator: ShipmentEvaluator,
    private readonly places: PlaceCache,
    @Inject(JETSTREAM_CONNECTION) private readonly nats: NatsConnection,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {
    this.slots = new BoundedSemaphore(config.EVALUATION_CONCURRENCY, Number.POSITIVE_INFINITY);
  }

  onApplicationBootstrap(): void {
    if (!this.config.EVALUATION_ENABLED) return;
    this.consumer = new DurableConsumer<ShipmentReadings[]>({
      nats: this.nats,
      stream: readingsStreamSettings(this.config),
      durable: jetStreamName(this.config.NATS_SUBJECT_PREFIX, 'shipment-evaluation'),
      decode: decodeShipmentReadings,
      handle: (batch) => this.handle(batch.flat()),
      logger: this.logger,
      maxBatch: 512,
      // Batches wait out the reorder delay side by side (`handle`).
      concurrentBatches: 64,
    });
    this.consumer.start();
  }

  private async handle(groups: ShipmentReadings[]): Promise<void> {
    const shipments = byShipment(groups);
    let newest = 0;
    for (const shipment of shipments) for (const reading of shipment.readings) newest = Math.max(newest, Date.parse(reading.receivedAt as string));
    await this.wait(newest + this.config.EVALUATION_DELAY_MS - Date.now());
    // A batch waits for the earlier batches of this process that hold any of its shipments, so that a
    // shipment is never evaluated by two of them at once here (the record's lock orders other workers);
    // batches of other shipments run beside it.
    const ids = shipments.map((shipment) => shipment.shipmentId);
    const earlier = new Set(ids.flatMap((id) => this.tails.get(id) ?? []));
    const run = Promise.all(earlier).then(() => this.evaluate(shipments));
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    for (const id of ids) this.tails.set(id, tail);
    void tail.then(() => {
      for (const id of ids) if (this.tails.get(id) === tail) this.tails.delete(id);
    });
    await run;
  }

  private async evaluate(shipments: ShipmentReadings[]): Promise<void> {
    // The places of each account once per batch (their version check reads every place of the account).
    const places = new Map<string, Promise<PlaceIndex>>();
    const placesOf = (account: AccountScope): Promise<PlaceIndex> => {
      const key = `${account.tenantId}/${account.accountId}`;
      let index = places.get(key);
      if (!index) places.set(key, (index = this.places.forAccount(account)));
      return index;
    };
    // Chunks of shipments in id order (each one transaction), EVALUATION_CONCURRENCY chunks at a time over all batches.
    shipments.sort((a, b) => (a.shipmentId < b.shipmentId ? -1 : a.shipmentId > b.shipmentId ? 1 : 0));
    const chunks: ShipmentReadings[][] = [];
    for (let i = 0; i < shipments.length; i += EVALUATION_CHUNK) chunks.push(shipments.slice(i, i + EVALUATION_CHUNK));
    await Promise.all(chunks.map((chunk) => this.slots.run(() => this.evaluator.evaluateMany(chunk, Date.now(), placesOf))));
  }

  /** The reorder delay; cut short when the process stops (the batch is then evaluated at once). */
  private wait(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const wait = {
        timer: setTimeout(() => {
          this.waiting.delete(wait);
          resolve();
        }, ms),
        done: resolve,
      };
      this.waiting.add(wait);
    });
  }

  async onModuleDestroy(): Promise<void> {
    for (const wait of this.waiting) {
      clearTimeout(wait.timer);
      wait.done();
    }
    this.waiting.clear();
    await this.consumer?.stop();
  }
}

/** The groups of the same shipment merged (a batch of messages may hold several of one shipment). */
export function byShipment(groups: ShipmentReadings[]): ShipmentReadings[] {
  const merged = new Map<string, ShipmentReadings>();
  for (const group of groups) {
    const key = `${group.tenantId}/${group.accountId}/${group.shipmentId}`;
    const held = merged.get(key);
    if (held) held.readings.push(...group.readings);
    else merged.set(key, { ...group, readings: [...group.readings] });
  }
  return [...merged.values()];
}
