import type { Logger } from '@tracking/core';
import { connectNats, natsLivenessCheck, natsReadinessCheck, NatsRpcClient } from '@tracking/messaging/nats';
import type { RunningService, ServiceMetrics } from '@tracking/observability';
import { Redis } from 'ioredis';
import type { DeviceGatewayConfig } from './config.js';
import { DeviceMetrics } from './ingest/device-metrics.js';
import { DmsAuthenticator } from './ingest/dms-authenticator.js';
import { DmsSink } from './ingest/dms-sink.js';
import { ConnectionBudget, LocalRateLimiter } from './ingest/local-limits.js';
import { TenantReadingsLimit } from './ingest/tenant-readings-limit.js';
import { type DeviceListener, type ListenerContext, type ListenerFactory, LISTENERS, readTls } from './listeners.js';

export interface StartedDeviceGateway extends RunningService {
  /** Each listener's name and what it listens on. */
  listening: { name: string; addresses: string[] }[];
  authenticator: DmsAuthenticator;
  sink: DmsSink;
}

/**
 * Starts the device gateway: NATS (the DMS), Redis (the tenants' readings limit), the authenticator and
 * the sink, then every listener. `stop` is the graceful shutdown: stop accepting, finish the batches
 * (every submit answered), close the connections, then NATS and Redis.
 */
export async function startDeviceGateway(
  config: DeviceGatewayConfig,
  logger: Logger,
  serviceMetrics: ServiceMetrics,
  listeners: ListenerFactory[] = LISTENERS,
): Promise<StartedDeviceGateway> {
  const nats = await connectNats(config, 'device-gateway');
  const rpc = new NatsRpcClient(nats, config.NATS_SUBJECT_PREFIX, config.DEVICE_RPC_TIMEOUT_MS, serviceMetrics, config.NATS_INBOX_PREFIX);
  const redis = new Redis(config.REDIS_URL, {
    lazyConnect: true,
    connectionName: 'device-gateway',
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    enableAutoPipelining: true,
  });
  redis.on('error', () => undefined);
  await redis.connect().catch((error: unknown) => logger.warn({ err: error }, 'Redis is not reachable at start; the tenants\' readings limit is not enforced until it is'));

  const metrics = new DeviceMetrics();
  serviceMetrics.include(metrics.registry);
  const authenticator = new DmsAuthenticator({
    rpc,
    logger,
    cacheMs: config.DEVICE_AUTH_CACHE_MS,
    revocationCheckMs: config.DEVICE_REVOCATION_CHECK_MS,
    rpcTimeoutMs: config.DEVICE_RPC_TIMEOUT_MS,
  });
  const sink = new DmsSink({
    rpc,
    authenticator,
    deviceLimit: new LocalRateLimiter(config.DEVICE_RATE_LIMIT),
    tenantLimit: new TenantReadingsLimit(redis, config.REDIS_KEY_PREFIX, config.RATE_LIMIT_READINGS, config.RATE_LIMIT_TENANT_OVERRIDES, logger),
    metrics,
    logger,
    maxWaitMs: config.DEVICE_BATCH_MAX_WAIT_MS,
    maxReadings: config.DEVICE_BATCH_MAX_READINGS,
    maxInFlight: config.DEVICE_BATCH_MAX_IN_FLIGHT,
    rpcTimeoutMs: config.DEVICE_RPC_TIMEOUT_MS,
    // The MQTT and Teltonika listeners count their messages themselves (DeviceMqttMetrics, TeltonikaMetrics).
    countedProtocols: ['Http'],
  });
  const context: ListenerContext = {
    config,
    authenticator,
    sink,
    metrics,
    logger,
    connections: new ConnectionBudget(config.DEVICE_MAX_CONNECTIONS),
    failedAuth: new LocalRateLimiter(config.DEVICE_AUTH_FAILURE_LIMIT),
    tls: readTls(config),
  };
  const started: DeviceListener[] = [];
  const listening: StartedDeviceGateway['listening'] = [];
  for (const factory of listeners) {
    const listener = factory(context);
    listening.push({ name: listener.name, addresses: await listener.start() });
    started.push(listener);
  }
  for (const { name, addresses } of listening) logger.debug({ listener: name, addresses }, `${name} listening`);

  return {
    listening,
    authenticator,
    sink,
    readiness: {
      required: { nats: natsReadinessCheck(nats) },
      reported: { redis: () => redis.status === 'ready' },
      live: { nats: natsLivenessCheck(nats) },
    },
    async stop() {
      await Promise.all(started.map((listener) => listener.stopAccepting()));
      await sink.drain();
      await Promise.all(started.map((listener) => listener.close()));
      authenticator.close();
      await nats.drain().catch(() => undefined);
      redis.disconnect();
    },
  };
}
