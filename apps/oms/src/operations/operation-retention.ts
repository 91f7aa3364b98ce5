import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import type { OmsConfig } from '../config.js';
import { DmsClient } from '../dms/dms.client.js';
import { LeasedInterval } from '../scheduling/leased-interval.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';
import { OperationRepository } from './operation.repository.js';

/** The lease of the retention task: one worker runs it at a time. */
export const RETENTION_LEASE = 'operations-retention';
/** Entries deleted per batch at most (with their operations), so that no transaction grows large. */
export const RETENTION_BATCH_ENTRIES = 20000;
/** Operations looked at per batch at most. */
const RETENTION_BATCH_OPERATIONS = 1000;

/**
 * Deletes finished operations `OPERATIONS_RETENTION_DAYS` after they finished, with their entries and
 * results, and the DMS's outcomes of them. A `LeasedInterval`: however many workers run, the holder of
 * its lease runs it once per `OPERATIONS_RETENTION_INTERVAL_MS`.
 *
 * Each batch is told to the DMS first and deleted here second: a failure in between leaves the
 * operations in place for the next run, never outcomes in the DMS without their operation.
 */
@Injectable()
export class OperationRetention implements OnApplicationBootstrap, OnApplicationShutdown {
  private job?: LeasedInterval;
  private stopping = false;

  constructor(
    private readonly operations: OperationRepository,
    private readonly dms: DmsClient,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.job = new LeasedInterval({
      config: this.config,
      name: RETENTION_LEASE,
      everyMs: this.config.OPERATIONS_RETENTION_INTERVAL_MS,
      run: () => this.purge(),
      logger: this.logger,
      what: 'operation retention',
    });
    await this.job.start();
  }

  /** Deletes expired operations batch by batch until none is left (or the worker shuts down); returns how many. */
  async purge(): Promise<number> {
    let deleted = 0;
    while (!this.stopping) {
      const batch = await this.operations.expiredBatch(this.config.OPERATIONS_RETENTION_DAYS, RETENTION_BATCH_ENTRIES, RETENTION_BATCH_OPERATIONS);
      if (batch.length === 0) break;
      await this.dms.purgeOperations({ operationIds: batch });
      deleted += await this.operations.deleteSettled(batch);
    }
    if (deleted > 0) this.logger.info({ deleted, retentionDays: this.config.OPERATIONS_RETENTION_DAYS }, 'deleted finished operations past their retention');
    return deleted;
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.job?.stop();
  }
}
