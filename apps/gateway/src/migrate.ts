import '@tracking/core/source-maps';
import 'reflect-metadata';
import { runMigrateCommand } from '@tracking/database';
import { gatewayConfigSchema } from './config.js';
import { gatewayMigrations } from './migrations/index.js';

/** `node apps/gateway/dist/migrate.js`: migrates the gateway database and exits (see runMigrateCommand). Signing keys are not created here: the
 * first gateway to start creates one. */
await runMigrateCommand({
  service: 'gateway',
  urlVariable: 'GATEWAY_DATABASE_URL',
  urlReader: gatewayConfigSchema.GATEWAY_DATABASE_URL,
  migrations: gatewayMigrations,
});
