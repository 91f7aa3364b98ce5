import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import type { OmsConfig } from '../../config.js';
import { IntervalJob } from '../../scheduling/interval-job.js';
import { OMS_CONFIG, OMS_LOGGER } from '../../tokens.js';
import { DeliveryRepository } from './delivery.repository.js';

/** The queue of the retention job (and its job scheduler's id). */
export const DELIVERY_RETENTION_QUEUE = 'webhook-deliveries-retention';
/** Deliveries deleted per statement at most, so that no transaction grows large. */
export const DELIVERY_RETENTION_BATCH = 5000;

/**
 * Deletes settled webhook deliveries `WEBHOOK_DELIVERIES_RETENTION_DAYS` after their last change
 * (docs/webhook-delivery.md, "Attempt log and retention"). An IntervalJob: a BullMQ job scheduler with a
 * fixed id, so however many workers run, it runs once per `WEBHOOK_DELIVERIES_RETENTION_INTERVAL_MS`.
 */
@Injectable()
export class DeliveryRetention implements OnApplicationBootstrap, OnApplicationShutdown {
  private job?: IntervalJob;
  private stopping = false;

  constructor(
    private readonly deliveries: DeliveryRepository,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.job = new IntervalJob({
      config: this.config,
      queue: DELIVERY_RETENTION_QUEUE,
      everyMs: this.config.WEBHOOK_DELIVERIES_RETENTION_INTERVAL_MS,
      run: () => this.purge(),
      logger: this.logger,
      what: 'webhook delivery retention',
    });
    await this.job.start();
  }

  /** Deletes expired deliveries batch by batch until none is left (or the worker shuts down); returns how many. */
  async purge(): Promise<number> {
    let deleted = 0;
    while (!this.stopping) {
      const batch = await this.deliveries.deleteExpired(this.config.WEBHOOK_DELIVERIES_RETENTION_DAYS, DELIVERY_RETENTION_BATCH);
      deleted += batch;
      if (batch < DELIVERY_RETENTION_BATCH) break;
    }
    if (deleted > 0) this.logger.info({ deleted, retentionDays: this.config.WEBHOOK_DELIVERIES_RETENTION_DAYS }, 'deleted webhook deliveries past their retention');
    return deleted;
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.job?.stop();
  }
}
