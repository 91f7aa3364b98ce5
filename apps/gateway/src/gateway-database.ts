import { prepareDatabase } from '@tracking/database';
import type { DataSource } from 'typeorm';
import type { GatewayConfig } from './config.js';
import { IDENTITY_ENTITIES } from './identity/identity.module.js';
import { gatewayMigrations } from './migrations/index.js';

/**
 * The gateway's database: identity and signing keys, migrated. Shared by the server and the admin CLI,
 * and kept apart from gateway.app.ts so that the CLI does not load the HTTP stack it never uses.
 */
export function prepareGatewayDatabase(config: GatewayConfig): Promise<DataSource> {
  return prepareDatabase({
    url: config.GATEWAY_DATABASE_URL,
    poolSize: config.GATEWAY_DATABASE_POOL_SIZE,
    entities: IDENTITY_ENTITIES,
    migrations: gatewayMigrations,
    applicationName: 'gateway',
  });
}
