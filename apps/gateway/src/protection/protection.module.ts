import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { AuthModule } from '../auth/auth.module.js';
import { IdempotencyInterceptor } from './idempotency/idempotency.interceptor.js';
import { IdempotencyStore } from './idempotency/idempotency.store.js';
import { ProtectionMetrics } from './protection.metrics.js';
import { RateLimitHooks } from './rate-limit/rate-limit.hooks.js';
import { RateLimitPolicies } from './rate-limit/rate-limit.policies.js';
import { RateLimiter } from './rate-limit/rate-limiter.service.js';
import { TokenSubjects } from './rate-limit/token-subjects.js';
import { SharedRedis } from './redis/shared-redis.js';

/**
 * The gateway's protections that every replica shares through Redis: rate limits (Fastify hooks,
 * registered by `startGateway` with `RateLimitHooks.register`) and idempotency keys (a global
 * interceptor on every POST).
 */
@Module({
  imports: [AuthModule],
  providers: [
    SharedRedis,
    ProtectionMetrics,
    RateLimitPolicies,
    RateLimiter,
    TokenSubjects,
    RateLimitHooks,
    IdempotencyStore,
    { provide: APP_INTERCEPTOR, useClass: IdempotencyInterceptor },
  ],
  exports: [SharedRedis, ProtectionMetrics, RateLimitHooks],
})
export class ProtectionModule {}
