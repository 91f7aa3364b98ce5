import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import type { OmsConfig } from '../../config.js';
import { LeasedInterval } from '../../scheduling/leased-interval.js';
import { OMS_CONFIG, OMS_LOGGER } from '../../tokens.js';
import { DeliveryRepository } from './delivery.repository.js';

/** The lease of the retention task: one worker runs it at a time. */
export const DELIVERY_RETENTION_LEASE = 'webhook-deliveries-retention';
/** Deliveries deleted per statement at most, so that no transaction grows large. */
export const DELIVERY_RETENTION_BATCH = 5000;

/**
 * Deletes settled webhook deliveries `WEBHOOK_DELIVERIES_RETENTION_DAYS` after their last change
 * (docs/webhook-delivery.md, "Attempt log and retention"). A `LeasedInterval`: however many workers run,
 * the holder of its lease runs it once per `WEBHOOK_DELIVERIES_RETENTION_INTERVAL_MS`.
 */
@Injectable()
export class DeliveryRetention implements OnApplicationBootstrap, OnApplicationShutdown {
  private job?: LeasedInterval;
  private stopping = false;

  constructor(
    private readonly deliveries: DeliveryRepository,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.job = new LeasedInterval({
      config: this.config,
      name: DELIVERY_RETENTION_LEASE,
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
