import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import { Redis } from 'ioredis';
import type { GatewayConfig } from '../../config.js';
import { GATEWAY_CONFIG, LOGGER } from '../../tokens.js';
import { ThrottledLog } from './throttled-log.js';

/** How long start-up waits for Redis; without it the gateway starts anyway (rate limits per replica meanwhile). */
const STARTUP_WAIT_MS = 2000;
const LOG_INTERVAL_MS = 30000;

/**
 * The gateway's connection to the Redis that all replicas share. Commands never queue: while the
 * connection is down they fail at once, and a command slower than `REDIS_COMMAND_TIMEOUT_MS` fails,
 * so callers decide quickly what to do without Redis. The client reconnects on its own.
 */
@Injectable()
export class SharedRedis implements OnModuleInit, OnApplicationShutdown {
  readonly client: Redis;
  private readonly prefix: string;
  private readonly connectionLog = new ThrottledLog(LOG_INTERVAL_MS);

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.prefix = config.REDIS_KEY_PREFIX;
    this.client = new Redis(config.REDIS_URL, {
      lazyConnect: true,
      connectionName: 'gateway',
      enableOfflineQueue: false,
      // A command sent again after a reconnect would count a request (or write a response) late.
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
      connectTimeout: STARTUP_WAIT_MS,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
      // The commands of requests handled in one turn of the event loop go out in one write instead of one
      // write per rate-limit check (speed machinery, docs/architecture.md).
      enableAutoPipelining: true,
    });
    // Without a listener ioredis prints every connection error to stderr.
    this.client.on('error', (error: Error) =>
      this.connectionLog.report((suppressed) => this.logger.warn({ err: error, suppressed }, 'Redis connection failed')),
    );
  }

  /** A key under `REDIS_KEY_PREFIX`. */
  key(...parts: string[]): string {
    return this.prefix + parts.join(':');
  }

  /** Whether commands can be sent now; when not, they would fail at once. */
  isReady(): boolean {
    return this.client.status === 'ready';
  }

  async onModuleInit(): Promise<void> {
    const ready = await Promise.race([
      this.client.connect().then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => setTimeout(resolve, STARTUP_WAIT_MS, false).unref()),
    ]);
    if (!ready) this.logger.warn('Redis is not reachable at start; each replica enforces rate limits alone until it is');
  }

  onApplicationShutdown(): void {
    this.client.disconnect();
  }
}
