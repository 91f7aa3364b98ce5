import type { INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type Logger, PinoNestLogger } from '@tracking/core';
import { PrefixedNatsServer } from './prefixed-nats.server.js';
import { RpcErrorFilter } from './rpc-error.filter.js';
import type { RpcMetrics } from './rpc-metrics.js';

export interface MicroserviceOptions {
  natsUrl: string;
  subjectPrefix: string;
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
      options.subjectPrefix,
      { servers: options.natsUrl.split(','), queue: options.queue, name: options.queue },
      { metrics: options.metrics, logger: options.logger },
    ),
    logger: new PinoNestLogger(options.logger),
  });
  app.useGlobalFilters(new RpcErrorFilter(options.logger, options.unavailable));
  await app.listen();
  return app;
}
