import type { INestApplicationContext, INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createLogger, type Logger, PinoNestLogger } from '@tracking/core';
import { isDatabaseUnavailable, prepareDatabase } from '@tracking/database';
import { startMicroservice } from '@tracking/messaging';
import { ServiceMetrics } from '@tracking/observability';
import type { DataSource } from 'typeorm';
import type { OmsConfig } from './config.js';
import { AlertEntity } from './alerts/alert.entity.js';
import { VisitEntity } from './alerts/visit.entity.js';
import { ItemEntity } from './items/item.entity.js';
import { omsMigrations } from './migrations/index.js';
import { OmsModule, OmsWorkerModule } from './oms.module.js';
import { OperationEntity, OperationEntryEntity } from './operations/operation.entity.js';
import { PointOfInterestEntity } from './points-of-interest/point-of-interest.entity.js';
import { SetEntity } from './sets/set.entity.js';
import { ShareLinkEntity } from './share-links/share-link.entity.js';
import { ShipmentEntity } from './shipments/shipment.entity.js';
import { WebhookDeliveryEntity } from './webhooks/webhook-delivery.entity.js';
import { WebhookEntity } from './webhooks/webhook.entity.js';

/** The OMS database, migrated (under an advisory lock, so replicas and workers may start together). */
export function prepareOmsDatabase(config: OmsConfig): Promise<DataSource> {
  return prepareDatabase({
    url: config.OMS_DATABASE_URL,
    poolSize: config.OMS_DATABASE_POOL_SIZE,
    entities: [
      ShipmentEntity,
      PointOfInterestEntity,
      SetEntity,
      ItemEntity,
      OperationEntity,
      OperationEntryEntity,
      WebhookEntity,
      WebhookDeliveryEntity,
      AlertEntity,
      VisitEntity,
      ShareLinkEntity,
    ],
    migrations: omsMigrations,
    applicationName: 'oms',
  });
}

/**
 * Prepares the OMS database and starts the OMS on NATS; used by `main.ts` and by tests. `close()` drains
 * its subscriptions and answers the messages in flight before it closes anything.
 */
export async function startOms(
  config: OmsConfig,
  logger: Logger = createLogger('oms'),
  metrics: ServiceMetrics = new ServiceMetrics('oms'),
): Promise<INestMicroservice> {
  const dataSource = await prepareOmsDatabase(config);
  metrics.watchDatabasePool(dataSource);
  return startMicroservice(OmsModule.forRoot(config, dataSource, logger, metrics), {
    nats: config,
    queue: 'oms',
    logger,
    metrics,
    unavailable: isDatabaseUnavailable,
  });
}

/**
 * Prepares the OMS database and starts a bulk-job worker; used by `worker.ts` and by tests. `close()`
 * stops taking jobs and hands the running ones back to the queue after their current chunk.
 */
export async function startOmsWorker(
  config: OmsConfig,
  logger: Logger = createLogger('worker'),
  metrics: ServiceMetrics = new ServiceMetrics('worker'),
): Promise<INestApplicationContext> {
  const dataSource = await prepareOmsDatabase(config);
  metrics.watchDatabasePool(dataSource);
  const app = await NestFactory.createApplicationContext(OmsWorkerModule.forRoot(config, dataSource, logger, metrics), {
    logger: new PinoNestLogger(logger),
  });
  await app.init();
  return app;
}
