import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { OpenAPIObject } from '@nestjs/swagger';
import { createLogger } from '@tracking/core';
import { ServiceMetrics } from '@tracking/observability';
import type { DataSource } from 'typeorm';
import { readGatewayConfig } from '../config.js';
import { GatewayModule } from '../gateway.module.js';
import { createOpenApiDocument } from './openapi.document.js';

/**
 * The document the gateway serves, built without PostgreSQL, NATS or Redis: Nest's preview mode reads
 * the modules and controllers but instantiates no provider, so nothing connects (and the data source,
 * never asked for, can be left out).
 */
export async function offlineOpenApiDocument(): Promise<OpenAPIObject> {
  const noDataSource = undefined as unknown as DataSource;
  const module = GatewayModule.forRoot(readGatewayConfig({}), noDataSource, createLogger('openapi', 'silent'), new ServiceMetrics('gateway'));
  const app = await NestFactory.create<NestFastifyApplication>(module, new FastifyAdapter(), { preview: true, logger: false });
  return createOpenApiDocument(app);
}
