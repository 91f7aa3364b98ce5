import { Injectable } from '@nestjs/common';
import { Counter, Registry } from 'prom-client';

/** What Redis is used for, as the `feature` label of the failure counter. */
export type RedisFeature = 'rate_limit' | 'idempotency';

/**
 * The protections' Prometheus counters, in a registry of this gateway instance (two gateways in one
 * process, as in tests, would clash in prom-client's global registry). The `/metrics` endpoint
 * merges `registry` into what it serves.
 */
@Injectable()
export class ProtectionMetrics {
  readonly registry = new Registry();

  /** Redis commands that failed or timed out: rate limits decided per replica, or keyed POSTs refused. */
  readonly redisFailures = new Counter({
    name: 'gateway_redis_failures_total',
    help: 'Redis commands of the gateway that failed or timed out, by feature (rate_limit: decided per replica meanwhile).',
    labelNames: ['feature'] as const,
    registers: [this.registry],
  });

  /** Rate limit decisions this replica made alone, Redis being down or slower than REDIS_COMMAND_TIMEOUT_MS. */
  readonly rateLimitLocal = new Counter({
    name: 'gateway_rate_limit_local_decisions_total',
    help: 'Rate limit decisions this gateway replica made alone (per-replica buckets) because Redis was down or slower than REDIS_COMMAND_TIMEOUT_MS, by policy.',
    labelNames: ['policy'] as const,
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'gateway_rate_limited_requests_total',
    help: 'Requests answered 429 RateLimitExceeded, by rate limit policy.',
    labelNames: ['policy'] as const,
    registers: [this.registry],
  });

  /** JSON bodies read by the gateway's parser (`http/json-parser.ts`), by outcome; a body refused before it is read counts nowhere. */
  readonly jsonBodies = new Counter({
    name: 'gateway_json_bodies_total',
    help: 'JSON request bodies read by the gateway, by outcome: parsed, too_deep (refused before JSON.parse), invalid.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly idempotentReplays = new Counter({
    name: 'gateway_idempotent_replays_total',
    help: 'POST requests answered with the stored response of an earlier request with the same Idempotency-Key.',
    registers: [this.registry],
  });

  /** Outcomes of keyed POSTs answered but not stored (`Idempotent-Stored: false`). */
  readonly idempotencyNotStored = new Counter({
    name: 'gateway_idempotency_not_stored_total',
    help: 'Outcomes of keyed POSTs answered but not stored, by reason: too-large (IDEMPOTENCY_MAX_RESPONSE_BYTES), over-budget (IDEMPOTENCY_MAX_BYTES_PER_APPLICATION).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
}
