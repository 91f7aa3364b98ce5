import type { Logger } from '@tracking/core';
import { defineGcra, emissionIntervalMicros, type RateLimit, rateLimitKey, type TenantLimits, toRateDecision } from '@tracking/rate-limit';
import type { Redis } from 'ioredis';

/**
 * The tenant's readings limit, charged in the very bucket `POST /readings` charges (the gateway's policy
 * `readings`: same Redis key, same GCRA script, same limit and overrides), so that a tenant's trackers
 * and its API clients share one budget. Like the gateway it fails open: without Redis nothing is limited.
 */
export class TenantReadingsLimit {
  private lastWarning = 0;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly limit: RateLimit,
    private readonly overrides: ReadonlyMap<string, TenantLimits>,
    private readonly logger: Logger,
  ) {
    defineGcra(redis);
  }

  /** Charges `cost` readings (all or none): 0 when allowed, else the whole seconds to wait. */
  async charge(tenantId: string, cost: number): Promise<number> {
    const limit = this.overrides.get(tenantId.toLowerCase())?.readings ?? this.limit;
    try {
      if (this.redis.status !== 'ready') throw new Error(`Redis connection is ${this.redis.status}`);
      const reply = await this.redis.gcra(1, rateLimitKey(this.prefix, 'readings', tenantId), emissionIntervalMicros(limit), limit.burst, cost);
      const decision = toRateDecision(reply);
      return decision.allowed ? 0 : Math.max(1, Math.ceil(decision.msUntilNext / 1000));
    } catch (error) {
      if (Date.now() - this.lastWarning > 30_000) {
        this.lastWarning = Date.now();
        this.logger.warn({ err: error }, "the tenants' readings limit is not enforced: Redis did not answer; readings pass");
      }
      return 0;
    }
  }
}
