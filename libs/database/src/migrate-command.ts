import { ConfigError, createLogger, readConfig, type Reader } from '@tracking/core';
import { prepareDatabase } from './data-source.js';

/**
 * The body of `node apps/<service>/dist/migrate.js`: creates the service's database if it is missing,
 * applies pending migrations and exits (0, or 1 with the reason); the Kubernetes migration Jobs run it.
 * It takes the same advisory lock as the service starting up (lock name = `service`), so it is safe beside
 * running or starting replicas, and it reads only the database URL variable.
 */
export async function runMigrateCommand(options: {
  service: string;
  urlVariable: string;
  urlReader: Reader<string>;
  migrations: Parameters<typeof prepareDatabase>[0]['migrations'];
}): Promise<void> {
  const { service, urlVariable, urlReader, migrations } = options;
  const logger = createLogger(`${service}-migrate`);
  try {
    const url = readConfig({ [urlVariable]: urlReader })[urlVariable] as string;
    const dataSource = await prepareDatabase({ url, poolSize: 1, entities: [], migrations, applicationName: service });
    await dataSource.destroy();
    logger.info(`the ${service} database is migrated`);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${service}-migrate: ${error.message}\n`);
    } else {
      logger.fatal({ err: error }, `${service} migrations failed`);
    }
    process.exit(1);
  }
}
