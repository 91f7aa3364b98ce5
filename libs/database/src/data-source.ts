import type { MixedList, EntitySchema } from 'typeorm';
import { ensureDatabase } from './ensure-database.js';
import { runMigrationsLocked } from './migrate.js';
import pg from 'pg';
import { DataSource } from 'typeorm';

/**
 * The pool's client, always listening for 'error'. node-postgres emits a connection's error on its client,
 * and an 'error' event nobody listens to ends the process. The pool listens while a client is idle and
 * TypeORM while it holds one, but TypeORM starts listening a microtask after the pool handed the client
 * over: a backend terminated right after the connection was made (`pg_terminate_backend`, a failover)
 * sends its error in the same read as the connection's readiness, and the error came in between, taking
 * the whole service down. The error is not lost: the client is no longer queryable, so the query or
 * transaction that uses it fails (and the pool drops it), as with any connection that broke.
 */
class ListeningClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }
}

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
    extra: { Client: ListeningClient },
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
