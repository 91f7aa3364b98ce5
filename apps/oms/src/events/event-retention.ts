import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import type { OmsConfig } from '../config.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';
import { EventRepository } from './event.repository.js';

/** Events deleted per statement at most, so that no transaction grows large. */
const RETENTION_BATCH = 10000;

/**
 * Deletes the feed's events `EVENTS_RETENTION_DAYS` after the OMS recorded them, every
 * `EVENTS_RETENTION_INTERVAL_MS`, in batches. Several workers running it at once only share the work
 * (each statement deletes rows the others have not).
 */
@Injectable()
export class EventRetention implements OnApplicationBootstrap, OnModuleDestroy {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private stopping = false;

  constructor(
    private readonly events: EventRepository,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      this.running ??= this.purge()
        .catch((error: unknown) => {
          this.logger.warn({ err: error }, 'event retention failed; it runs again at the next interval');
          return 0;
        })
        .finally(() => {
          this.running = undefined;
        });
    }, this.config.EVENTS_RETENTION_INTERVAL_MS);
    this.timer.unref();
  }

  /** Deletes expired events until none is left; returns how many. */
  async purge(): Promise<number> {
    let deleted = 0;
    for (;;) {
      if (this.stopping) break;
      const batch = await this.events.deleteExpired(this.config.EVENTS_RETENTION_DAYS, RETENTION_BATCH);
      deleted += batch;
      if (batch < RETENTION_BATCH) break;
    }
    if (deleted > 0) this.logger.info({ deleted, retentionDays: this.config.EVENTS_RETENTION_DAYS }, 'deleted events past their retention');
    return deleted;
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    await this.running;
  }
}
