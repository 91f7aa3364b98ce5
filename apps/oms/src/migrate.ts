import '@tracking/core/source-maps';
import 'reflect-metadata';
import { runMigrateCommand } from '@tracking/database';
import { omsConfigSchema } from './config.js';
import { omsMigrations } from './migrations/index.js';

/** `node apps/oms/dist/migrate.js`: migrates the oms database and exits (see runMigrateCommand). */
await runMigrateCommand({
  service: 'oms',
  urlVariable: 'OMS_DATABASE_URL',
  urlReader: omsConfigSchema.OMS_DATABASE_URL,
  migrations: omsMigrations,
});
