import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { Logger } from '@tracking/core';
import { ServiceMetrics } from '@tracking/observability';
import type { DataSource } from 'typeorm';
import { AccountsModule } from './accounts/accounts.module.js';
import { AlertsModule } from './alerts/alerts.module.js';
import { AssignmentsModule } from './assignments/assignments.module.js';
import { AuthModule } from './auth/auth.module.js';
import { DevicesModule } from './devices/devices.module.js';
import type { GatewayConfig } from './config.js';
import { ConnectionDrain } from './health/connection-drain.js';
import { HealthController } from './health/health.controller.js';
import { ItemsModule } from './items/items.module.js';
import { OpenApiModule } from './openapi/openapi.module.js';
import { OperationsModule } from './operations/operations.module.js';
import { EventsModule } from './events/events.module.js';
import { PointsOfInterestModule } from './points-of-interest/points-of-interest.module.js';
import { ProtectionModule } from './protection/protection.module.js';
import { ReadingsModule } from './readings/readings.module.js';
import { TracksModule } from './tracks/tracks.module.js';
import { RpcModule } from './rpc/rpc.module.js';
import { SetsModule } from './sets/sets.module.js';
import { ShareLinksModule } from './share-links/share-links.module.js';
import { ShipmentsModule } from './shipments/shipments.module.js';
import { GATEWAY_CONFIG, LOGGER } from './tokens.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

@Module({})
export class GatewayModule {
  static forRoot(config: GatewayConfig, dataSource: DataSource, logger: Logger, metrics: ServiceMetrics): DynamicModule {
    return {
      module: GatewayModule,
      global: true,
      imports: [
        TypeOrmModule.forRootAsync({ useFactory: () => ({}), dataSourceFactory: async () => dataSource }),
        RpcModule,
        ProtectionModule,
        AuthModule,
        AccountsModule,
        ShipmentsModule,
        PointsOfInterestModule,
        SetsModule,
        ItemsModule,
        DevicesModule,
        AssignmentsModule,
        OperationsModule,
        ReadingsModule,
        TracksModule,
        EventsModule,
        WebhooksModule,
        AlertsModule,
        ShareLinksModule,
        OpenApiModule,
      ],
      controllers: [HealthController],
      providers: [
        { provide: GATEWAY_CONFIG, useValue: config },
        { provide: LOGGER, useValue: logger },
        { provide: ServiceMetrics, useValue: metrics },
        ConnectionDrain,
      ],
      exports: [GATEWAY_CONFIG, LOGGER, ServiceMetrics],
    };
  }
}
