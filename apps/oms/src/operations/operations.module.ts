import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ShipmentStoreModule } from '../shipments/shipment-store.module.js';
import { OperationEntity, OperationEntryEntity } from './operation.entity.js';
import { OperationMetrics } from './operation-metrics.js';
import { OperationQueue } from './operation-queue.js';
import { OperationRepository } from './operation.repository.js';
import { OperationsHandler } from './operations.handler.js';
import { OperationsService } from './operations.service.js';
import { OperationRunner } from './operation-runner.js';
import { OperationRetention } from './operation-retention.js';
import { OperationWorker } from './operation-worker.js';

/** The OMS's API side of bulk operations: recording, reading and cancelling them. */
@Module({
  imports: [TypeOrmModule.forFeature([OperationEntity, OperationEntryEntity])],
  controllers: [OperationsHandler],
  providers: [OperationsService, OperationRepository, OperationQueue],
})
export class OperationsModule {}

/** The worker side: the queue consumer, the runner and the retention job (apps/oms/src/worker.ts). */
@Module({
  imports: [TypeOrmModule.forFeature([OperationEntity, OperationEntryEntity]), ShipmentStoreModule],
  providers: [OperationRepository, OperationQueue, OperationRunner, OperationMetrics, OperationWorker, OperationRetention],
})
export class OperationWorkerModule {}
