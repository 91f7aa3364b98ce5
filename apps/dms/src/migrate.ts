import 'reflect-metadata';
import { ConfigError, createLogger, readConfig } from '@tracking/core';
import { prepareDatabase } from '@tracking/database';
import { dmsConfigSchema } from './config.js';
import { dmsMigrations } from './migrations/index.js';

/**
 * `node apps/dms/dist/migrate.js`: creates the DMS database if it is missing, applies pending migrations and
 * exits; the Kubernetes migration Job runs it. It takes the same advisory lock as a DMS starting up (lock
 * name `dms`), so it is safe beside running or starting replicas, and it needs only DMS_DATABASE_URL.
 */
const logger = createLogger('dms-migrate');
try {
  const { DMS_DATABASE_URL } = readConfig({ DMS_DATABASE_URL: dmsConfigSchema.DMS_DATABASE_URL });
  const dataSource = await prepareDatabase({
    url: DMS_DATABASE_URL,
    poolSize: 1,
    entities: [],
    migrations: dmsMigrations,
    applicationName: 'dms',
  });
  await dataSource.destroy();
  logger.info('the dms database is migrated');
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`dms-migrate: ${error.message}\n`);
  } else {
    logger.fatal({ err: error }, 'dms migrations failed');
  }
  process.exit(1);
}
