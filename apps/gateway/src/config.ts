import { ConfigError, env, readConfig, type ConfigOf } from '@tracking/core';
import { checkNatsConfig, natsConfigSchema } from '@tracking/messaging';
import { keyEncryptionKeysSetting } from './auth/key-envelope.js';
import { DEFAULT_READINGS_LIMIT, rateLimitSetting, tenantOverridesSetting, trustProxySetting } from '@tracking/rate-limit';

export const gatewayConfigSchema = {
  PORT: env.int({ default: 3000, min: 0, max: 65535 }),
  /** Loopback unless told otherwise: containers set HOST=0.0.0.0 (Dockerfile, docker-compose.yml, deploy/). */
  HOST: env.string({ default: '127.0.0.1' }),
  /** From a connection's first byte until the end of the request line and headers; then 408 and the connection closes. */
  HTTP_HEADERS_TIMEOUT_MS: env.int({ default: 10000, min: 100, max: 600000 }),
  /** From a connection's first byte until the end of the request body (4 MiB bulk bodies included); 0 disables it. */
  HTTP_REQUEST_TIMEOUT_MS: env.int({ default: 60000, min: 0, max: 600000 }),
  /** A connection without any traffic for this long is closed, whatever it is waiting for; 0 disables it. */
  HTTP_CONNECTION_TIMEOUT_MS: env.int({ default: 120000, min: 0, max: 3600000 }),
  /** An idle keep-alive connection is closed after this long: above the 60 s idle timeout of common load balancers. */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: env.int({ default: 72000, min: 1000, max: 600000 }),
  /** Requests served on one connection before the gateway closes it (spreads long-lived clients over replicas); 0: no limit. */
  HTTP_MAX_REQUESTS_PER_SOCKET: env.int({ default: 1000, min: 0, max: 1000000 }),
  /**
   * On SIGTERM, how long the gateway keeps its connections open, answering each with `Connection: close`,
   * for clients to close them after their next request, before it closes the idle ones.
   */
  HTTP_DRAIN_MS: env.int({ default: 3000, min: 0, max: 60000 }),
  /** Open connections per gateway process; beyond it, new connections are closed at once. 0: no limit. */
  HTTP_MAX_CONNECTIONS: env.int({ default: 4096, min: 0, max: 1000000 }),
  GATEWAY_DATABASE_URL: env.url({
    default: 'postgres://postgres@127.0.0.1:5432/tracking_gateway',
    protocols: ['postgres', 'postgresql'],
  }),
  GATEWAY_DATABASE_POOL_SIZE: env.int({ default: 10, min: 1, max: 200 }),
  ...natsConfigSchema,
  /** How long the gateway waits for a service's reply before answering 504. */
  RPC_TIMEOUT_MS: env.int({ default: 5000, min: 100, max: 120000 }),
  /** HMAC key of page cursors of the gateway's own collections (`GET /v1/accounts`); the same value as the services'. */
  CURSOR_SECRET: env.secret({ developmentDefault: 'local-development-cursor-secret', minLength: 16 }),
  JWT_ISSUER: env.string({ default: 'tracking-gateway' }),
  JWT_AUDIENCE: env.string({ default: 'tracking-api' }),
  /** How long a disabled application's tokens or a changed role may still be honoured. */
  IDENTITY_CACHE_TTL_MS: env.int({ default: 30000, min: 0, max: 60000 }),
  /** Application secrets hashed at once by the token endpoint (scrypt, about 60 ms of CPU each). */
  TOKEN_HASH_CONCURRENCY: env.int({ default: 2, min: 1, max: 64 }),
  /** Token requests that may wait for a hashing slot; beyond that the token endpoint answers 503. */
  TOKEN_HASH_QUEUE: env.int({ default: 16, min: 0, max: 10000 }),
  /** Redis holds the rate limit buckets and idempotency keys that every replica shares. */
  REDIS_URL: env.url({ default: 'redis://127.0.0.1:6379', protocols: ['redis', 'rediss'] }),
  REDIS_KEY_PREFIX: env.keyPrefix({ default: 'tracking:' }),
  /**
   * A Redis command slower than this counts as failed: rate limits are then decided by this replica alone
   * (local buckets) until a command answers in time again; a keyed POST gets 503.
   */
  REDIS_COMMAND_TIMEOUT_MS: env.int({ default: 250, min: 10, max: 10000 }),
  /**
   * Idempotency records one application may hold at once (running or stored, within their 24 h); a new
   * key beyond it is refused with 429 until the oldest expires.
   */
  IDEMPOTENCY_MAX_KEYS_PER_APPLICATION: env.int({ default: 10000, min: 1, max: 10000000 }),
  /**
   * Bytes of stored responses one application may hold at once (as Redis keeps them: compressed and
   * sealed); a new key once they are reached is refused with 429, an outcome that would exceed them is
   * not stored (docs/operations-limits.md, "Idempotency keys per application").
   */
  IDEMPOTENCY_MAX_BYTES_PER_APPLICATION: env.int({ default: 32 * 1024 * 1024, min: 1024, max: 64 * 1024 * 1024 * 1024 }),
  /** The largest response stored for replay (compressed and sealed); a larger one is answered but not stored. */
  IDEMPOTENCY_MAX_RESPONSE_BYTES: env.int({ default: 256 * 1024, min: 1024, max: 64 * 1024 * 1024 }),
  /** Per application (the token's `sub`), on every request with a valid token. */
  RATE_LIMIT_APPLICATION: rateLimitSetting({ default: '100/1s burst 200' }),
  /** Per client address, on requests without a valid token (401s, JWKS, unknown routes). */
  RATE_LIMIT_ADDRESS: rateLimitSetting({ default: '20/1s burst 50' }),
  /**
   * POST /v1/applications/token: every request per client address; failed requests (401) per client
   * address and tenant of the body, and per client address and application of the body.
   */
  RATE_LIMIT_TOKEN_ADDRESS: rateLimitSetting({ default: '10/1m burst 20' }),
  RATE_LIMIT_TOKEN_FAILURES: rateLimitSetting({ default: '5/1m burst 10' }),
  /**
   * Readings per tenant, whatever application sends them: each entry of a `POST /readings` batch counts
   * one; a batch over it gets 429 whole (docs/readings.md, "Rate limit").
   */
  RATE_LIMIT_READINGS: rateLimitSetting({ default: DEFAULT_READINGS_LIMIT }),
  /**
   * Fair admission of `POST /readings` batches per gateway replica (docs/readings.md, "Fair admission"):
   * readings being stored at once, whatever their tenant (sized from the measured ingest capacity) ...
   */
  INGEST_CAPACITY_READINGS: env.int({ default: 4000, min: 1, max: 1000000 }),
  /** ... of one tenant (at most INGEST_CAPACITY_READINGS; below it, so that other tenants always find room) ... */
  INGEST_TENANT_READINGS: env.int({ default: 2000, min: 1, max: 1000000 }),
  /** ... a tenant's batches that may wait for room (one more is refused at once with 429) ... */
  INGEST_TENANT_QUEUE: env.int({ default: 16, min: 0, max: 10000 }),
  /** ... and how long one may wait before it is refused with 429 and Retry-After. */
  INGEST_QUEUE_TIMEOUT_MS: env.int({ default: 2000, min: 1, max: 60000 }),
  /**
   * GET /v1/public/tracking/{token} (the share links' public view, read without a token) per client
   * address, instead of RATE_LIMIT_ADDRESS: a tracking page polls every 30 s (docs/share-links.md).
   */
  RATE_LIMIT_PUBLIC_TRACKING: rateLimitSetting({ default: '60/1m burst 30' }),
  /** JSON: tenant id -> `{"application": "...", "tokenFailures": "...", "readings": "..."}` replacing those limits. */
  RATE_LIMIT_TENANT_OVERRIDES: tenantOverridesSetting(),
  /** Proxies whose X-Forwarded-For names the client address: empty, hop count, or addresses/CIDRs. */
  TRUST_PROXY: trustProxySetting(),
  /** Keys that encrypt the signing keys at rest: `<id>:<base64 32 bytes>`, comma-separated, the first current. */
  KEY_ENCRYPTION_KEYS: keyEncryptionKeysSetting(),
  /**
   * Where people reach this API from outside: a share link's `url` is `{PUBLIC_BASE_URL}/track/{token}`
   * (docs/share-links.md); a trailing slash is dropped.
   */
  PUBLIC_BASE_URL: env.url({ default: 'http://localhost:3000', protocols: ['http', 'https'] }),
};

export type GatewayConfig = ConfigOf<typeof gatewayConfigSchema>;

export function readGatewayConfig(source?: Record<string, string | undefined>): GatewayConfig {
  const config = checkNatsConfig(readConfig(gatewayConfigSchema, source));
  if (config.INGEST_TENANT_READINGS > config.INGEST_CAPACITY_READINGS) {
    throw new ConfigError('INGEST_TENANT_READINGS', `must be at most INGEST_CAPACITY_READINGS (${config.INGEST_CAPACITY_READINGS})`);
  }
  return { ...config, PUBLIC_BASE_URL: config.PUBLIC_BASE_URL.replace(/\/+$/, '') };
}

/** The token lifetime is fixed by the specification. */
export const TOKEN_TTL_SECONDS = 86400;
/** Largest accepted request body (docs/api.md, "Conventions"). */
export const BODY_LIMIT_BYTES = 1024 * 1024;
/** Largest accepted bulk request body (docs/api.md, "Conventions"); routes opt in with `@RouteConfig(BULK_BODY)`. */
export const BULK_BODY_LIMIT_BYTES = 4 * 1024 * 1024;
/** Largest accepted body of `POST /v1/applications/token`, the one route that reads a body without a token. */
export const TOKEN_BODY_LIMIT_BYTES = 16 * 1024;
