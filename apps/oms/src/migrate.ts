import 'reflect-metadata';
import { ConfigError, createLogger, readConfig } from '@tracking/core';
import { prepareDatabase } from '@tracking/database';
import { omsConfigSchema } from './config.js';
import { omsMigrations } from './migrations/index.js';

/**
 * `node apps/oms/dist/migrate.js`: creates the OMS database if it is missing, applies pending migrations and
 * exits; the Kubernetes migration Job runs it. It takes the same advisory lock as an OMS starting up (lock
 * name `oms`), so it is safe beside running or starting replicas, and it needs only OMS_DATABASE_URL.
 */
const logger = createLogger('oms-migrate');
try {
  const { OMS_DATABASE_URL } = readConfig({ OMS_DATABASE_URL: omsConfigSchema.OMS_DATABASE_URL });
  const dataSource = await prepareDatabase({
    url: OMS_DATABASE_URL,
    poolSize: 1,
    entities: [],
    migrations: omsMigrations,
    applicationName: 'oms',
  });
  await dataSource.destroy();
  logger.info('the oms database is migrated');
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`oms-migrate: ${error.message}\n`);
  } else {
    logger.fatal({ err: error }, 'oms migrations failed');
  }
  process.exit(1);
}
