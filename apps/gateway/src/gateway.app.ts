import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { NestFactory } from '@nestjs/core';
import { createLogger, type Logger, PinoNestLogger } from '@tracking/core';
import { prepareDatabase } from '@tracking/database';
import type { GatewayConfig } from './config.js';
import { GatewayModule } from './gateway.module.js';
import { HttpErrorFilter } from './http/error.filter.js';
import { configureFastify, fastifyOptions } from './http/fastify-setup.js';
import { createValidationPipe } from './http/validation.js';
import { IDENTITY_ENTITIES } from './identity/identity.module.js';
import { gatewayMigrations } from './migrations/index.js';

/** The gateway's database: identity and signing keys, migrated. Shared by the server and the admin CLI. */
export function prepareGatewayDatabase(config: GatewayConfig) {
  return prepareDatabase({
    url: config.GATEWAY_DATABASE_URL,
    poolSize: config.GATEWAY_DATABASE_POOL_SIZE,
    entities: IDENTITY_ENTITIES,
    migrations: gatewayMigrations,
    applicationName: 'gateway',
  });
}

/** Builds the gateway and starts listening on `PORT`; used by `main.ts` and by tests. */
export async function startGateway(
  config: GatewayConfig,
  logger: Logger = createLogger('gateway'),
): Promise<NestFastifyApplication> {
  const dataSource = await prepareGatewayDatabase(config);
  const app = await NestFactory.create<NestFastifyApplication>(
    GatewayModule.forRoot(config, dataSource, logger),
    new FastifyAdapter(fastifyOptions()),
    { bodyParser: false, logger: new PinoNestLogger(logger) },
  );
  configureFastify(app.getHttpAdapter().getInstance());
  app.useGlobalFilters(new HttpErrorFilter(logger));
  app.useGlobalPipes(createValidationPipe());
  app.enableShutdownHooks();
  await app.listen({ port: config.PORT, host: config.HOST });
  return app;
}
