import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { type AccountScope, jetStreamName, ReadingSubjects, type ShipmentScope } from '@tracking/contracts';
import type { Logger } from '@tracking/core';
import type { GeofenceReading, PlaceIndex } from '@tracking/geofence';
import { DurableConsumer, JETSTREAM_CONNECTION, type Lease, LeaseGroup, readingsPartitionOf, readingsStreamSettings } from '@tracking/outbox';
import pLimit, { type LimitFunction } from 'p-limit';
import type { OmsConfig } from '../config.js';
import { decodeShipmentReadings, type ShipmentReadings } from './readings-message.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';
import { EvaluationTimers } from './evaluation-timers.js';
import { PlaceCache } from './place-cache.js';
import { EVALUATION_CHUNK, ShipmentEvaluator } from './shipment-evaluator.js';

/** The lease group of the evaluation's partitions, and the name of partition `p`'s lease. */
const LEASE_GROUP = 'evaluation';
const LEASE_PREFIX = 'evaluation:';
const leaseName = (partition: number) => `${LEASE_PREFIX}${partition}`;

/** A partition this process holds: its lease, its consumer, and its turn (one evaluation of it at a time). */
interface HeldPartition {
  partition: number;
  lease: Lease;
  consumer: DurableConsumer<ShipmentReadings[]>;
  turn: LimitFunction;
}

/** The partition is not held by this process (another worker evaluates it). */
export class PartitionNotHeld extends Error {
  constructor(readonly partition: number) {
    super(`partition ${partition} of the readings stream is not held by this process`);
  }
}

/**
 * Feeds the readings stream to the evaluation, each shipment evaluated by one owner
 * (docs/geofence-evaluation.md, "Ownership"). The stream's subjects are partitioned by shipment
 * (`READINGS_PARTITIONS`); the workers share the partitions through leases (`LeaseGroup`: heartbeats,
 * rendezvous hashing over the live workers, an epoch per lease that every evaluation's transaction
 * checks). For each partition it holds, a worker runs the partition's durable consumer
 * `<PREFIX>shipment-evaluation-<p>` in `ordered` mode: one batch at a time, in stream order, a failed
 * batch tried again in place, and a new owner starting from the first unacknowledged message, so the
 * messages of a worker that died come first, not after the ack wait behind newer ones.
 *
 * A batch is grouped by shipment and waits until `EVALUATION_DELAY_MS` has passed since the newest
 * receipt in it (the reorder buffer: a burst is evaluated at once); its shipments are then evaluated in
 * chunks of `EVALUATION_CHUNK` per transaction, `EVALUATION_CONCURRENCY` chunks at a time over all
 * partitions (p-limit), and its messages acknowledged only then. The partition's timers (`EvaluationTimers`)
 * take the same turn, so one partition is never evaluated twice at once here.
 */
@Injectable()
export class EvaluationConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private group: LeaseGroup | undefined;
  private readonly held = new Map<number, HeldPartition>();
  private readonly waiting = new Set<{ timer: NodeJS.Timeout; done: () => void }>();
  /** Chunk transactions of this process: at most EVALUATION_CONCURRENCY at once. */
  private readonly chunks: LimitFunction;
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly evaluator: ShipmentEvaluator,
    private readonly timers: EvaluationTimers,
    private readonly places: PlaceCache,
    @Inject(JETSTREAM_CONNECTION) private readonly nats: NatsConnection,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {
    this.chunks = pLimit(config.EVALUATION_CONCURRENCY);
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.EVALUATION_ENABLED) return;
    const partitions = Array.from({ length: this.config.READINGS_PARTITIONS }, (_, p) => p);
    this.group = new LeaseGroup({
      databaseUrl: this.config.OMS_DATABASE_URL,
      group: LEASE_GROUP,
      names: partitions.map(leaseName),
      logger: this.logger,
      ttlMs: this.config.LEASE_TTL_MS,
      heartbeatMs: this.config.LEASE_HEARTBEAT_MS,
      take: (lease) => this.hold(Number(lease.name.slice(LEASE_PREFIX.length)), lease),
    });
    await this.group.start();
    this.sweeper = setInterval(() => {
      this.sweeping ??= this.timers
        .sweep([...this.held.keys()], (partition, chunk) => this.evaluate(partition, chunk.map((scope) => ({ ...scope, readings: [] }))))
        .catch((error: unknown) => this.logger.warn({ err: error }, 'evaluation timers: cannot look for due shipments; trying again at the next interval'))
        .finally(() => (this.sweeping = undefined));
    }, this.config.EVALUATION_SWEEP_INTERVAL_MS);
  }

  /** The partitions this process holds now. */
  partitions(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  /** The partition of a shipment's readings. */
  partitionOf(shipmentId: string): number {
    return readingsPartitionOf(shipmentId, this.config.READINGS_PARTITIONS);
  }

  /** This process now holds the partition: its consumer starts, from the first unacknowledged message. */
  private hold(partition: number, lease: Lease): { stop: () => Promise<void> } {
    const consumer = new DurableConsumer<ShipmentReadings[]>({
      nats: this.nats,
      stream: readingsStreamSettings(this.config),
      durable: jetStreamName(this.config.NATS_SUBJECT_PREFIX, `shipment-evaluation-${partition}`),
      filterSubject: ReadingSubjects.partition(this.config.NATS_SUBJECT_PREFIX, partition),
      decode: decodeShipmentReadings,
      handle: (batch) => this.handle(partition, batch.flat()),
      logger: this.logger,
      maxBatch: 512,
      ordered: true,
    });
    const held: HeldPartition = { partition, lease, consumer, turn: pLimit(1) };
    this.held.set(partition, held);
    consumer.start();
    return {
      stop: async () => {
        if (this.held.get(partition) === held) this.held.delete(partition);
        await consumer.stop();
        // A timer's evaluation of the partition in progress.
        await held.turn(() => undefined);
      },
    };
  }

  private async handle(partition: number, groups: ShipmentReadings[]): Promise<void> {
    const shipments = byShipment(groups);
    let newest = 0;
    for (const shipment of shipments) for (const reading of shipment.readings) newest = Math.max(newest, Date.parse(reading.receivedAt as string));
    await this.wait(newest + this.config.EVALUATION_DELAY_MS - Date.now());
    await this.evaluate(partition, shipments);
  }

  /**
   * Evaluates shipments of one partition this process holds (their readings; none: the timers), in the
   * partition's turn and under its lease. Throws `PartitionNotHeld` when this process does not hold it,
   * and `LeaseLost` when it lost it meanwhile (nothing is then committed).
   */
  async evaluate(partition: number, shipments: (ShipmentScope & { readings: readonly GeofenceReading[] })[], now?: number): Promise<void> {
    const held = this.held.get(partition);
    if (!held) throw new PartitionNotHeld(partition);
    await held.turn(() => this.evaluateHeld(held, shipments, now));
  }

  private async evaluateHeld(held: HeldPartition, shipments: (ShipmentScope & { readings: readonly GeofenceReading[] })[], at?: number): Promise<void> {
    // The places of each account once per batch (each lookup reads the places' version: a round trip).
    const places = new Map<string, Promise<PlaceIndex>>();
    const placesOf = (account: AccountScope): Promise<PlaceIndex> => {
      const key = `${account.tenantId}/${account.accountId}`;
      let index = places.get(key);
      if (!index) places.set(key, (index = this.places.forAccount(account)));
      return index;
    };
    // Chunks of shipments in id order (each one transaction), EVALUATION_CONCURRENCY chunks at a time over all partitions.
    const sorted = [...shipments].sort((a, b) => (a.shipmentId < b.shipmentId ? -1 : a.shipmentId > b.shipmentId ? 1 : 0));
    const chunks: (typeof sorted)[] = [];
    for (let i = 0; i < sorted.length; i += EVALUATION_CHUNK) chunks.push(sorted.slice(i, i + EVALUATION_CHUNK));
    await Promise.all(chunks.map((chunk) => this.chunks(() => this.evaluator.evaluateMany(chunk, held.lease, at ?? Date.now(), placesOf))));
  }

  /** The reorder delay; cut short when the process stops (the batch is then evaluated at once). */
  private wait(ms: number): Promise<void> {
    if (ms <= 0 || this.stopped) return Promise.resolve();
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
    this.stopped = true;
    clearInterval(this.sweeper);
    for (const wait of this.waiting) {
      clearTimeout(wait.timer);
      wait.done();
    }
    this.waiting.clear();
    await this.sweeping;
    await this.group?.stop();
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
