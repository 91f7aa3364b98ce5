import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { createLogger, type Logger } from '@tracking/core';
import type { ServiceMetrics } from '@tracking/observability';
import { OutboxModule } from '@tracking/outbox';
import { CursorCodec } from '@tracking/paging';
import type { DataSource } from 'typeorm';
import type { DmsConfig } from './config.js';
import { CredentialsModule } from './credentials/credentials.module.js';
import { DevicesModule } from './devices/devices.module.js';
import { ReleasedTargets } from './devices/released-targets.js';
import { PingHandler } from './health/ping.handler.js';
import { OperationsModule } from './operations/operations.module.js';
import { ReadingsModule } from './readings/readings.module.js';
import { DMS_CONFIG, DMS_LOGGER } from './tokens.js';
import { TracksModule } from './tracks/tracks.module.js';

@Module({})
export class DmsModule {
  /**
   * The DMS's modules on `dataSource`. `relay` (the service's logger and metrics) adds the outbox relay
   * and the JetStream connection; the medium tests leave it out, having no NATS.
   */
  static forRoot(config: DmsConfig, dataSource: DataSource, relay?: { logger: Logger; metrics: ServiceMetrics }): DynamicModule {
    return {
      module: DmsModule,
      global: true,
      imports: [
        TypeOrmModule.forRootAsync({ useFactory: () => ({}), dataSourceFactory: async () => dataSource }),
        ...(relay
          ? [OutboxModule.forRoot({ name: 'dms', config, dataSource, databaseUrl: config.DMS_DATABASE_URL, logger: relay.logger, registry: relay.metrics.registry })]
          : []),
        DevicesModule,
        CredentialsModule,
        OperationsModule,
        ReadingsModule,
        TracksModule,
      ],
      controllers: [PingHandler],
      providers: [
        { provide: DMS_CONFIG, useValue: config },
        { provide: DMS_LOGGER, useValue: relay?.logger ?? createLogger('dms') },
        { provide: CursorCodec, useValue: new CursorCodec(config.CURSOR_SECRET) },
        { provide: ReleasedTargets, useValue: new ReleasedTargets(config.DMS_CLOCK_SKEW_MS) },
      ],
      exports: [DMS_CONFIG, DMS_LOGGER, CursorCodec, ReleasedTargets],
    };
  }
}
