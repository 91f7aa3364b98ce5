import type { INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type Logger, PinoNestLogger } from '@tracking/core';
import { PrefixedNatsServer } from './prefixed-nats.server.js';
import { RpcErrorFilter } from './rpc-error.filter.js';

export interface MicroserviceOptions {
  natsUrl: string;
  subjectPrefix: string;
  /** The NATS queue group: replicas of one service share its load. */
  queue: string;
  logger: Logger;
}

/** Creates and starts a Nest microservice listening on NATS under the configured subject prefix. */
export async function startMicroservice(module: unknown, options: MicroserviceOptions): Promise<INestMicroservice> {
  const app = await NestFactory.createMicroservice(module as never, {
    strategy: new PrefixedNatsServer(options.subjectPrefix, {
      servers: options.natsUrl.split(','),
      queue: options.queue,
      name: options.queue,
    }),
    logger: new PinoNestLogger(options.logger),
  });
  app.useGlobalFilters(new RpcErrorFilter(options.logger));
  app.enableShutdownHooks();
  await app.listen();
  return app;
}
