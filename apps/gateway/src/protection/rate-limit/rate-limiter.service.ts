import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import { LOGGER } from '../../tokens.js';
import { ProtectionMetrics } from '../protection.metrics.js';
import { SharedRedis } from '../redis/shared-redis.js';
import { ThrottledLog } from '../redis/throttled-log.js';
import { defineGcra, emissionIntervalMicros, type RateDecision, rateLimitKey, toRateDecision } from '@tracking/rate-limit';
import type { Policy } from './rate-limit.policies.js';

const LOG_INTERVAL_MS = 30000;

/** Counts requests against buckets in the shared Redis. */
@Injectable()
export class RateLimiter {
  private readonly failureLog = new ThrottledLog(LOG_INTERVAL_MS);

  constructor(
    private readonly redis: SharedRedis,
    private readonly metrics: ProtectionMetrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    defineGcra(redis.client);
  }

  /**
   * Counts one request (or `cost` units, e.g. the readings of a batch) of `subject` (an application id, a tenant id, an address) under `policy`; with
   * several subjects, in each of their buckets, allowed only if all of them allow it.
   * Without an answer from Redis it fails open: `undefined`, counted and logged (throttled).
   */
  consume(policy: Policy, subject: string | string[], cost = 1): Promise<RateDecision | undefined> {
    return this.run(policy, typeof subject === 'string' ? [subject] : subject, cost);
  }

  /** Gives back a request `consume` charged to `subjects` (e.g. a token request that turned out good). */
  async refund(policy: Policy, subjects: string[]): Promise<void> {
    await this.run(policy, subjects, -1);
  }

  private async run(policy: Policy, subjects: string[], step: number): Promise<RateDecision | undefined> {
    const { burst } = policy.limit;
    const intervalMicros = emissionIntervalMicros(policy.limit);
    try {
      if (!this.redis.isReady()) throw new Error(`Redis connection is ${this.redis.client.status}`);
      const keys = subjects.map((subject) => rateLimitKey(this.redis.key(), policy.name, subject));
      const reply = await this.redis.client.gcra(keys.length, ...keys, intervalMicros, burst, step);
      return toRateDecision(reply);
    } catch (error) {
      this.metrics.redisFailures.inc({ feature: 'rate_limit' });
      this.failureLog.report((suppressed) =>
        this.logger.warn({ err: error, suppressed }, 'rate limiting is not enforced: Redis did not answer; requests pass'),
      );
      return undefined;
    }
  }
}
