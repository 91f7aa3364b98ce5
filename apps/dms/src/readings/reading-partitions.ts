import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import { DataSource } from 'typeorm';
import type { DmsConfig } from '../config.js';
import { DMS_CONFIG, DMS_LOGGER } from '../tokens.js';

const DAY_MS = 86_400_000;
/**
 * A partition is dropped only once its whole range lies this long past the retention, so that a reading
 * accepted just inside the retention (the cutoff moves on while its batch commits) never loses its
 * partition under it, also with the replicas' clocks a little apart.
 */
export const DROP_GRACE_MS = 3_600_000;
const PARTITION_NAME = /^readings_p(\d{4})(\d{2})(\d{2})$/;
/** Every replica's partition changes take turns on this lock (CREATE ... IF NOT EXISTS alone can race). */
const PARTITIONS_LOCK = 'readings:partitions';

/** The UTC day of an instant, as the start of that day in epoch ms. */
export function dayOf(epochMs: number): number {
  return Math.floor(epochMs / DAY_MS) * DAY_MS;
}

export function partitionName(day: number): string {
  return `readings_p${new Date(day).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/**
 * The daily range partitions of `readings` (docs/readings.md, "Storage"). At start and on a timer each
 * replica creates the partitions of yesterday to `READINGS_PARTITIONS_AHEAD_DAYS` ahead and drops those
 * whose whole day lies past `READINGS_RETENTION_DAYS` (a `DROP TABLE` of the partition: no row is
 * deleted). A late reading of an older day within the retention gets its day's partition when its batch
 * arrives (`ensure`), before the batch's transaction starts.
 */
@Injectable()
export class ReadingPartitions implements OnApplicationBootstrap, OnApplicationShutdown {
  /** Days (epoch ms of 00:00 UTC) known to have a partition. */
  private readonly known = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(DMS_CONFIG) private readonly config: DmsConfig,
    @Inject(DMS_LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.maintain();
    this.timer = setInterval(() => {
      this.running ??= this.maintain()
        .then(() => undefined)
        .catch((error: unknown) => this.logger.error({ err: error }, 'readings partition maintenance failed; retrying on the next tick'))
        .finally(() => (this.running = undefined));
    }, this.config.READINGS_MAINTENANCE_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** The oldest `recordedAt` (epoch ms) a reading may have now. */
  retentionCutoff(now: number): number {
    return now - this.config.READINGS_RETENTION_DAYS * DAY_MS;
  }

  /** Creates the partitions ahead and drops those past the retention; returns the names it dropped. */
  async maintain(now = Date.now()): Promise<string[]> {
    const today = dayOf(now);
    const wanted: number[] = [];
    for (let day = today - DAY_MS; day <= today + this.config.READINGS_PARTITIONS_AHEAD_DAYS * DAY_MS; day += DAY_MS) wanted.push(day);
    await this.refresh();
    await this.create(wanted.filter((day) => !this.known.has(day)));
    const expired = [...this.known].filter((day) => day + DAY_MS <= this.retentionCutoff(now) - DROP_GRACE_MS).sort((a, b) => a - b);
    if (expired.length > 0) await this.drop(expired);
    return expired.map(partitionName);
  }

  /** Makes sure the days of these instants have their partitions. */
  async ensure(instants: Iterable<number>): Promise<void> {
    const missing = new Set<number>();
    for (const instant of instants) {
      const day = dayOf(instant);
      if (!this.known.has(day)) missing.add(day);
    }
    if (missing.size > 0) await this.create([...missing].sort((a, b) => a - b));
  }

  private async refresh(): Promise<void> {
    const rows: { name: string }[] = await this.dataSource.query(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'readings'::regclass`,
    );
    this.known.clear();
    for (const { name } of rows) {
      const match = PARTITION_NAME.exec(name);
      if (match) this.known.add(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
    }
  }

  private async create(days: number[]): Promise<void> {
    if (days.length === 0) return;
    await this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [PARTITIONS_LOCK]);
      for (const day of days) {
        const from = new Date(day).toISOString();
        const to = new Date(day + DAY_MS).toISOString();
        await manager.query(`CREATE TABLE IF NOT EXISTS ${partitionName(day)} PARTITION OF readings FOR VALUES FROM ('${from}') TO ('${to}')`);
      }
    });
    for (const day of days) this.known.add(day);
    this.logger.info({ partitions: days.map(partitionName) }, 'readings partitions created');
  }

  private async drop(days: number[]): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [PARTITIONS_LOCK]);
      for (const day of days) await manager.query(`DROP TABLE IF EXISTS ${partitionName(day)}`);
    });
    for (const day of days) this.known.delete(day);
    this.logger.info({ partitions: days.map(partitionName) }, 'readings partitions past the retention dropped');
  }
}
