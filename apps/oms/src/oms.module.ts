import { type DynamicModule, Module } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import type { ServiceMetrics } from '@tracking/observability';
import type { DataSource } from 'typeorm';
import type { OmsConfig } from './config.js';
import { AssignmentsModule } from './assignments/assignments.module.js';
import { PingHandler } from './health/ping.handler.js';
import { ItemsModule } from './items/items.module.js';
import { OmsCoreModule } from './oms-core.module.js';
import { OperationsModule, OperationWorkerModule } from './operations/operations.module.js';
import { PointsOfInterestModule } from './points-of-interest/points-of-interest.module.js';
import { SetsModule } from './sets/sets.module.js';
import { ShipmentsModule } from './shipments/shipments.module.js';

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
      ],
      controllers: [PingHandler],
    };
  }
}

/** The bulk-job worker: consumes the operations queue (apps/oms/src/worker.ts). */
@Module({})
export class OmsWorkerModule {
  static forRoot(config: OmsConfig, dataSource: DataSource, logger: Logger, metrics: ServiceMetrics): DynamicModule {
    return { module: OmsWorkerModule, imports: [OmsCoreModule.forRoot(config, dataSource, logger, metrics), OperationWorkerModule] };
  }
}
