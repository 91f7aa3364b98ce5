import type { INestMicroservice } from '@nestjs/common';
import { createLogger, type Logger } from '@tracking/core';
import { prepareDatabase } from '@tracking/database';
import { startMicroservice } from '@tracking/messaging';
import type { OmsConfig } from './config.js';
import { ItemEntity } from './items/item.entity.js';
import { omsMigrations } from './migrations/index.js';
import { OmsModule } from './oms.module.js';
import { PointOfInterestEntity } from './points-of-interest/point-of-interest.entity.js';
import { SetEntity } from './sets/set.entity.js';
import { ShipmentEntity } from './shipments/shipment.entity.js';

/** Prepares the OMS database and starts the OMS on NATS; used by `main.ts` and by tests. */
export async function startOms(config: OmsConfig, logger: Logger = createLogger('oms')): Promise<INestMicroservice> {
  const dataSource = await prepareDatabase({
    url: config.OMS_DATABASE_URL,
    poolSize: config.OMS_DATABASE_POOL_SIZE,
    entities: [ShipmentEntity, PointOfInterestEntity, SetEntity, ItemEntity],
    migrations: omsMigrations,
    applicationName: 'oms',
  });
  return startMicroservice(OmsModule.forRoot(config, dataSource), {
    natsUrl: config.NATS_URL,
    subjectPrefix: config.NATS_SUBJECT_PREFIX,
    queue: 'oms',
    logger,
  });
}
