import '@tracking/core/source-maps';
import 'reflect-metadata';
import { runMigrateCommand } from '@tracking/database';
import { dmsConfigSchema } from './config.js';
import { dmsMigrations } from './migrations/index.js';

/** `node apps/dms/dist/migrate.js`: migrates the dms database and exits (see runMigrateCommand). */
await runMigrateCommand({
  service: 'dms',
  urlVariable: 'DMS_DATABASE_URL',
  urlReader: dmsConfigSchema.DMS_DATABASE_URL,
  migrations: dmsMigrations,
});
