import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ModulesContainer, NestFactory } from '@nestjs/core';
import { createLogger, type Logger, PinoNestLogger } from '@tracking/core';
import { ServiceMetrics } from '@tracking/observability';
import type { GatewayConfig } from './config.js';
import { prepareGatewayDatabase } from './gateway-database.js';
import { GatewayModule } from './gateway.module.js';
import { ConnectionDrain } from './health/connection-drain.js';
import { registerHttpMetrics } from './health/http-metrics.js';
import { assertApiControllers } from './http/api-controller.js';
import { HttpErrorFilter } from './http/error.filter.js';
import { registerJsonParser } from './http/json-parser.js';
import { registerBodyAdmission } from './http/body-admission.js';
import { AccessService } from './identity/access.service.js';
import { Authenticator } from './auth/authenticator.js';
import { configureFastify, fastifyOptions } from './http/fastify-setup.js';
import { createValidationPipe } from './http/validation.js';
import { setupOpenApi } from './openapi/openapi.setup.js';
import { ProtectionMetrics } from './protection/protection.metrics.js';
import { RateLimitHooks } from './protection/rate-limit/rate-limit.hooks.js';

/**
 * Builds the gateway and starts listening on `PORT`; used by `main.ts` and by tests. Its metrics go to
 * `metrics`; `close()` stops accepting, finishes the requests in flight, then closes its connections.
 */
export async function startGateway(
  config: GatewayConfig,
  logger: Logger = createLogger('gateway'),
  metrics: ServiceMetrics = new ServiceMetrics('gateway'),
): Promise<NestFastifyApplication> {
  const dataSource = await prepareGatewayDatabase(config);
  metrics.watchDatabasePool(dataSource);
  const app = await NestFactory.create<NestFastifyApplication>(
    GatewayModule.forRoot(config, dataSource, logger, metrics),
    new FastifyAdapter({ ...fastifyOptions(config), trustProxy: config.TRUST_PROXY }),
    { bodyParser: false, logger: new PinoNestLogger(logger) },
  );
  assertApiControllers(app.get(ModulesContainer));
  configureFastify(app.getHttpAdapter().getInstance(), config);
  registerHttpMetrics(app.getHttpAdapter().getInstance(), metrics, logger);
  app.get(ConnectionDrain).register(app.getHttpAdapter().getInstance());
  metrics.include(app.get(ProtectionMetrics).registry);
  app.get(RateLimitHooks).register(app.getHttpAdapter().getInstance());
  app.get(Authenticator).registerBeforeBody(app.getHttpAdapter().getInstance());
  registerBodyAdmission(app.getHttpAdapter().getInstance(), app.get(ModulesContainer), app.get(Authenticator), app.get(AccessService));
  const protection = app.get(ProtectionMetrics);
  registerJsonParser(app.getHttpAdapter().getInstance(), (outcome) => protection.jsonBodies.inc({ outcome }));
  app.useGlobalFilters(new HttpErrorFilter(logger));
  app.useGlobalPipes(createValidationPipe());
  await setupOpenApi(app);
  await app.listen({ port: config.PORT, host: config.HOST });
  return app;
}
