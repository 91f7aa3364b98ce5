import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy, Optional } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '@tracking/core';
import { ensureStream, JETSTREAM_CONNECTION, readingsStreamSettings } from '@tracking/outbox';
import type { DmsConfig } from '../config.js';
import { DMS_CONFIG, DMS_LOGGER } from '../tokens.js';

/**
 * Creates (or updates) the readings stream at start, trying again every few seconds until it is there:
 * the DMS's outbox relay publishes in order, so readings it cannot publish would hold back what follows.
 * Without the JetStream connection (the medium tests) there is nothing to set up.
 */
@Injectable()
export class ReadingsStream implements OnApplicationBootstrap, OnModuleDestroy {
  private stopping = false;
  private settingUp: Promise<void> | undefined;

  constructor(
    @Inject(DMS_CONFIG) private readonly config: DmsConfig,
    @Inject(DMS_LOGGER) private readonly logger: Logger,
    @Optional() @Inject(JETSTREAM_CONNECTION) private readonly nats?: NatsConnection,
  ) {}

  onApplicationBootstrap(): void {
    if (this.nats) this.settingUp = this.setUp(this.nats);
  }

  private async setUp(nats: NatsConnection): Promise<void> {
    for (let attempt = 0; !this.stopping; attempt++) {
      try {
        await ensureStream(nats, readingsStreamSettings(this.config));
        return;
      } catch (error) {
        if (attempt === 0) this.logger.warn({ err: error }, 'cannot set up the readings stream yet; retrying (readings wait in the outbox)');
      }
      await new Promise((resolve) => setTimeout(resolve, 2000).unref());
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    await this.settingUp;
  }
}
