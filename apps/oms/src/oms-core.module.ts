import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { Logger } from '@tracking/core';
import { ServiceMetrics } from '@tracking/observability';
import { OutboxModule } from '@tracking/outbox';
import { CursorCodec } from '@tracking/paging';
import type { DataSource } from 'typeorm';
import type { OmsConfig } from './config.js';
import { DmsModule } from './dms/dms.module.js';
import { OMS_CONFIG, OMS_LOGGER } from './tokens.js';

/**
 * What both OMS processes share, the service on NATS and the bulk-job worker: the database, the
 * configuration, the logger, the metrics, the cursor codec, the DMS client, and the outbox's relay to
 * JetStream (one relay publishes at a time, whichever process runs it).
 */
@Module({})
export class OmsCoreModule {
  static forRoot(config: OmsConfig, dataSource: DataSource, logger: Logger, metrics: ServiceMetrics): DynamicModule {
    const providers = [
      { provide: OMS_CONFIG, useValue: config },
      { provide: OMS_LOGGER, useValue: logger },
      { provide: ServiceMetrics, useValue: metrics },
      { provide: CursorCodec, useValue: new CursorCodec(config.CURSOR_SECRET) },
    ];
    return {
      module: OmsCoreModule,
      global: true,
      imports: [
        TypeOrmModule.forRootAsync({ useFactory: () => ({}), dataSourceFactory: async () => dataSource }),
        DmsModule.forRoot(config),
        OutboxModule.forRoot({ name: 'oms', config, dataSource, databaseUrl: config.OMS_DATABASE_URL, logger, registry: metrics.registry }),
      ],
      providers,
      exports: [OMS_CONFIG, OMS_LOGGER, ServiceMetrics, CursorCodec],
    };
  }
}
