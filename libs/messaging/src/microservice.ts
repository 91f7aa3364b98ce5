import type { INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type Logger, PinoNestLogger } from '@tracking/core';
import { type NatsConfig, natsConnectionOptions } from './nats-connection.js';
import { PrefixedNatsServer } from './prefixed-nats.server.js';
import { RpcErrorFilter } from './rpc-error.filter.js';
import type { RpcMetrics } from './rpc-metrics.js';

export interface MicroserviceOptions {
  /** Servers, subject prefix, credentials, TLS (`natsConfigSchema`). */
  nats: NatsConfig;
  /** The NATS queue group: replicas of one service share its load. */
  queue: string;
  logger: Logger;
  /** Where each handled message's duration and outcome go. */
  metrics?: RpcMetrics;
  /** Errors that mean a dependency (the service's database) is out of reach: answered 503 rather than 500. */
  unavailable?: (error: unknown) => boolean;
}

/**
 * Creates and starts a Nest microservice listening on NATS under the configured subject prefix.
 * Signals are the process's business (`runService` of `@tracking/observability`), not the app's:
 * `close()` drains the subscriptions and answers what is in flight before it closes anything.
 */
export async function startMicroservice(module: unknown, options: MicroserviceOptions): Promise<INestMicroservice> {
  const app = await NestFactory.createMicroservice(module as never, {
    strategy: new PrefixedNatsServer(
      options.nats.NATS_SUBJECT_PREFIX,
      // The options of every connection of the system, reconnecting forever among them: Nest's transport
      // would otherwise keep the client's default of 10 attempts, and a longer outage would leave the
      // service up but deaf for good.
      { ...natsConnectionOptions(options.nats, options.queue), queue: options.queue },
      { metrics: options.metrics, logger: options.logger },
    ),
    logger: new PinoNestLogger(options.logger),
  });
  app.useGlobalFilters(new RpcErrorFilter(options.logger, options.unavailable));
  await app.listen();
  return app;
}
