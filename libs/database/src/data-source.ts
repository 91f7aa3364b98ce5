import type { MixedList, EntitySchema } from 'typeorm';
import { ensureDatabase } from './ensure-database.js';
import { runMigrationsLocked } from './migrate.js';
import { DataSource } from 'typeorm';

export interface ServiceDataSourceOptions {
  url: string;
  poolSize: number;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  entities: MixedList<Function | string | EntitySchema>;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  migrations: MixedList<Function | string>;
  applicationName: string;
}

/** The DataSource options every service uses: migrations only, never `synchronize`. */
export function createServiceDataSource(options: ServiceDataSourceOptions): DataSource {
  return new DataSource({
    type: 'postgres',
    url: options.url,
    entities: options.entities,
    migrations: options.migrations,
    migrationsTableName: 'migrations',
    synchronize: false,
    migrationsRun: false,
    poolSize: options.poolSize,
    applicationName: options.applicationName,
    logging: false,
  });
}

/**
 * Everything a service does with its database before it serves: create the database if missing,
 * connect, and apply pending migrations under an advisory lock.
 */
export async function prepareDatabase(options: ServiceDataSourceOptions): Promise<DataSource> {
  await ensureDatabase(options.url);
  const dataSource = createServiceDataSource(options);
  await dataSource.initialize();
  try {
    await runMigrationsLocked(dataSource, options.url, options.applicationName);
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  return dataSource;
}
