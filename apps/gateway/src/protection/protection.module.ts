import { Global, Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { IdempotencyStore } from './idempotency/idempotency.store.js';
import { ProtectionMetrics } from './protection.metrics.js';
import { RateLimitHooks } from './rate-limit/rate-limit.hooks.js';
import { RateLimitPolicies } from './rate-limit/rate-limit.policies.js';
import { RateLimiter } from './rate-limit/rate-limiter.service.js';
import { SharedRedis } from './redis/shared-redis.js';

/**
 * The gateway's protections that every replica shares through Redis: rate limits (Fastify hooks,
 * registered by `startGateway` with `RateLimitHooks.register`) and idempotency keys (the interceptor
 * that `@ApiController` binds to every POST route; each controller's module makes its own from the store
 * exported here, which is why the module is global).
 */
@Global()
@Module({
  imports: [AuthModule],
  providers: [
    SharedRedis,
    ProtectionMetrics,
    RateLimitPolicies,
    RateLimiter,
    RateLimitHooks,
    IdempotencyStore,
  ],
  exports: [SharedRedis, ProtectionMetrics, RateLimitHooks, IdempotencyStore],
})
export class ProtectionModule {}
