import type { INestMicroservice } from '@nestjs/common';
import { createLogger, type Logger } from '@tracking/core';
import { isDatabaseUnavailable, prepareDatabase } from '@tracking/database';
import { startMicroservice } from '@tracking/messaging';
import { ServiceMetrics } from '@tracking/observability';
import type { DmsConfig } from './config.js';
import { CredentialEntity } from './credentials/credential.entity.js';
import { DeviceEntity } from './devices/device.entity.js';
import { DmsModule } from './dms.module.js';
import { dmsMigrations } from './migrations/index.js';

/**
 * Prepares the DMS database and starts the DMS on NATS; used by `main.ts` and by tests. `close()` drains
 * its subscriptions and answers the messages in flight before it closes anything.
 */
export async function startDms(
  config: DmsConfig,
  logger: Logger = createLogger('dms'),
  metrics: ServiceMetrics = new ServiceMetrics('dms'),
): Promise<INestMicroservice> {
  const dataSource = await prepareDatabase({
    url: config.DMS_DATABASE_URL,
    poolSize: config.DMS_DATABASE_POOL_SIZE,
    entities: [DeviceEntity, CredentialEntity],
    migrations: dmsMigrations,
    applicationName: 'dms',
  });
  metrics.watchDatabasePool(dataSource);
  return startMicroservice(DmsModule.forRoot(config, dataSource, { logger, metrics }), {
    nats: config,
    queue: 'dms',
    logger,
    metrics,
    unavailable: isDatabaseUnavailable,
  });
}
