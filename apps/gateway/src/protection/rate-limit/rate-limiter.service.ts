import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import type { GatewayConfig } from '../../config.js';
import { GATEWAY_CONFIG, LOGGER } from '../../tokens.js';
import { ProtectionMetrics } from '../protection.metrics.js';
import { SharedRedis } from '../redis/shared-redis.js';
import { ThrottledLog } from '../redis/throttled-log.js';
import { defineGcra, emissionIntervalMicros, type RateDecision, rateLimitKey, toRateDecision } from '@tracking/rate-limit';
import { LocalBuckets } from './local-buckets.js';
import type { Policy } from './rate-limit.policies.js';

const LOG_INTERVAL_MS = 30000;

/**
 * Counts requests against buckets in the shared Redis. When Redis does not answer within
 * `REDIS_COMMAND_TIMEOUT_MS` (or is down), this replica decides alone with `LocalBuckets`, so limits
 * still hold (per replica) instead of failing open. After a command was too slow, the next decisions are
 * local at once, while one command at a time still goes to Redis as a probe, and the first that answers
 * in time brings Redis back: a slow Redis costs one timeout, not one per request
 * (docs/api.md, "Rate limits"; figures from `bench/rate-limit-redis-load.mjs`).
 */
@Injectable()
export class RateLimiter {
  private readonly failureLog = new ThrottledLog(LOG_INTERVAL_MS);
  private readonly local = new LocalBuckets();
  private readonly timeoutMs: number;
  /** Set when a command failed or was too slow; cleared by the first that answers within the timeout. */
  private slow = false;
  /** A probe command is in flight while `slow`. */
  private probing = false;

  constructor(
    private readonly redis: SharedRedis,
    private readonly metrics: ProtectionMetrics,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
  ) {
    defineGcra(redis.client);
    this.timeoutMs = config.REDIS_COMMAND_TIMEOUT_MS;
  }

  /**
   * Counts one request (or `cost` units, e.g. the readings of a batch) of `subject` (an application id, a
   * tenant id, an address) under `policy`; with several subjects, in each of their buckets, allowed only
   * if all of them allow it.
   */
  consume(policy: Policy, subject: string | string[], cost = 1): Promise<RateDecision> {
    return this.run(policy, typeof subject === 'string' ? [subject] : subject, cost, 'charge');
  }

  /** Whether `cost` more would be allowed in every bucket of `subjects` now, charging nothing. */
  peek(policy: Policy, subjects: string[], cost = 1): Promise<RateDecision> {
    return this.run(policy, subjects, cost, 'peek');
  }

  /** Charges one unit to every bucket of `subjects` even past its capacity (a failure counted once it happened). */
  charge(policy: Policy, subjects: string[]): Promise<RateDecision> {
    return this.run(policy, subjects, 1, 'force');
  }

  private async run(policy: Policy, subjects: string[], step: number, mode: Mode): Promise<RateDecision> {
    const { burst } = policy.limit;
    const intervalMicros = emissionIntervalMicros(policy.limit);
    if (!this.redis.isReady()) return this.decideLocally(policy, subjects, step, mode, new Error(`Redis connection is ${this.redis.client.status}`));
    const keys = subjects.map((subject) => rateLimitKey(this.redis.key(), policy.name, subject));
    if (this.slow) {
      // Decided here without waiting. One command at a time still goes to Redis as a probe (every
      // request's would queue up in a slow Redis and keep it slow: measured, bench/rate-limit-redis-load.mjs);
      // answered in time, it says Redis is back.
      if (!this.probing) {
        this.probing = true;
        const started = performance.now();
        this.redis.client
          .gcra(keys.length, ...keys, intervalMicros, burst, step, mode)
          .then(
            () => {
              if (performance.now() - started < this.timeoutMs) this.slow = false;
            },
            () => this.metrics.redisFailures.inc({ feature: 'rate_limit' }),
          )
          .finally(() => {
            this.probing = false;
          });
      }
      return this.decideLocally(policy, subjects, step, mode, undefined);
    }
    const command = this.redis.client.gcra(keys.length, ...keys, intervalMicros, burst, step, mode);
    try {
      return toRateDecision(await command);
    } catch (error) {
      this.slow = true;
      return this.decideLocally(policy, subjects, step, mode, error);
    }
  }

  /** This replica's decision; `error` (counted and logged, throttled) when Redis just failed. */
  private decideLocally(policy: Policy, subjects: string[], step: number, mode: Mode, error: unknown): RateDecision {
    this.metrics.rateLimitLocal.inc({ policy: policy.name });
    if (error !== undefined) {
      this.metrics.redisFailures.inc({ feature: 'rate_limit' });
      this.failureLog.report((suppressed) =>
        this.logger.warn({ err: error, suppressed }, 'Redis did not answer in time: this replica enforces rate limits alone until it does'),
      );
    }
    return this.local.decide(policy, subjects, step, mode);
  }
}

type Mode = 'charge' | 'peek' | 'force';
