import 'reflect-metadata';
import { ConfigError, createLogger, readConfig } from '@tracking/core';
import { prepareDatabase } from '@tracking/database';
import { gatewayConfigSchema } from './config.js';
import { gatewayMigrations } from './migrations/index.js';

/**
 * `node apps/gateway/dist/migrate.js`: creates the identity database if it is missing, applies pending
 * migrations and exits; the Kubernetes migration Job runs it. It takes the same advisory lock as a gateway
 * starting up (lock name `gateway`), so it is safe beside running or starting replicas, and it needs only
 * GATEWAY_DATABASE_URL. Signing keys are not created here: the first gateway to start creates one.
 */
const logger = createLogger('gateway-migrate');
try {
  const { GATEWAY_DATABASE_URL } = readConfig({ GATEWAY_DATABASE_URL: gatewayConfigSchema.GATEWAY_DATABASE_URL });
  const dataSource = await prepareDatabase({
    url: GATEWAY_DATABASE_URL,
    poolSize: 1,
    entities: [],
    migrations: gatewayMigrations,
    applicationName: 'gateway',
  });
  await dataSource.destroy();
  logger.info('the gateway database is migrated');
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`gateway-migrate: ${error.message}\n`);
  } else {
    logger.fatal({ err: error }, 'gateway migrations failed');
  }
  process.exit(1);
}
