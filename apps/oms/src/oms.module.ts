import { type DynamicModule, Module } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import type { ServiceMetrics } from '@tracking/observability';
import type { DataSource } from 'typeorm';
import type { OmsConfig } from './config.js';
import { AlertsModule } from './alerts/alerts.module.js';
import { AssignmentsModule } from './assignments/assignments.module.js';
import { EvaluationModule } from './evaluation/evaluation.module.js';
import { PingHandler } from './health/ping.handler.js';
import { EventRetentionModule, EventsModule } from './events/events.module.js';
import { ItemsModule } from './items/items.module.js';
import { OmsCoreModule } from './oms-core.module.js';
import { OperationsModule, OperationWorkerModule } from './operations/operations.module.js';
import { PositionsModule } from './positions/positions.module.js';
import { PointsOfInterestModule } from './points-of-interest/points-of-interest.module.js';
import { SetsModule } from './sets/sets.module.js';
import { ShareLinksModule } from './share-links/share-links.module.js';
import { ShipmentsModule } from './shipments/shipments.module.js';
import { WebhookDeliveryModule } from './webhooks/delivery/webhook-delivery.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

/** The OMS service: every `oms.*` subject. */
@Module({})
export class OmsModule {
  static forRoot(config: OmsConfig, dataSource: DataSource, logger: Logger, metrics: ServiceMetrics): DynamicModule {
    return {
      module: OmsModule,
      imports: [
        OmsCoreModule.forRoot(config, dataSource, logger, metrics),
        ShipmentsModule,
        PointsOfInterestModule,
        SetsModule,
        ItemsModule,
        AssignmentsModule,
        OperationsModule,
        EventsModule,
        WebhooksModule,
        AlertsModule,
        PositionsModule,
        ShareLinksModule,
      ],
      controllers: [PingHandler],
    };
  }
}

/** The worker (apps/oms/src/worker.ts): bulk operations, event retention, webhook delivery, the evaluation of readings. */
@Module({})
export class OmsWorkerModule {
  static forRoot(config: OmsConfig, dataSource: DataSource, logger: Logger, metrics: ServiceMetrics): DynamicModule {
    return { module: OmsWorkerModule, imports: [OmsCoreModule.forRoot(config, dataSource, logger, metrics), OperationWorkerModule, EventRetentionModule, WebhookDeliveryModule, EvaluationModule] };
  }
}
