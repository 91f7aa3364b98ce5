import { env, readConfig, type ConfigOf } from '@tracking/core';

export const gatewayConfigSchema = {
  PORT: env.int({ default: 3000, min: 0, max: 65535 }),
  HOST: env.string({ default: '0.0.0.0' }),
  GATEWAY_DATABASE_URL: env.url({
    default: 'postgres://postgres@127.0.0.1:5432/tracking_gateway',
    protocols: ['postgres', 'postgresql'],
  }),
  GATEWAY_DATABASE_POOL_SIZE: env.int({ default: 10, min: 1, max: 200 }),
  NATS_URL: env.string({ default: 'nats://127.0.0.1:4222' }),
  NATS_SUBJECT_PREFIX: env.prefix({ default: '' }),
  /** How long the gateway waits for a service's reply before answering 504. */
  RPC_TIMEOUT_MS: env.int({ default: 5000, min: 100, max: 120000 }),
  JWT_ISSUER: env.string({ default: 'tracking-gateway' }),
  JWT_AUDIENCE: env.string({ default: 'tracking-api' }),
  /** How long a disabled application's tokens or a changed role may still be honoured. */
  IDENTITY_CACHE_TTL_MS: env.int({ default: 30000, min: 0, max: 60000 }),
};

export type GatewayConfig = ConfigOf<typeof gatewayConfigSchema>;

export function readGatewayConfig(source?: Record<string, string | undefined>): GatewayConfig {
  return readConfig(gatewayConfigSchema, source);
}

/** The token lifetime is fixed by the specification. */
export const TOKEN_TTL_SECONDS = 86400;
/** Largest accepted request body (API.md). */
export const BODY_LIMIT_BYTES = 1024 * 1024;
/** Largest accepted body of a bulk request (API.md); routes opt in with `@RouteConfig(BULK_BODY)`. */
export const BULK_BODY_LIMIT_BYTES = 4 * 1024 * 1024;
