import { createHmac, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode } from '@tracking/contracts';
import { DomainError, entryBound } from '@tracking/core';
import { ServiceMetrics } from '@tracking/observability';
import { LRUCache } from 'lru-cache';
import pLimit, { type LimitFunction } from 'p-limit';
import { Counter } from 'prom-client';
import type { GatewayConfig } from '../config.js';
import type { ApplicationEntity } from '../identity/application.entity.js';
import { DECOY_HASH, verifySecret } from '../identity/secret-hash.js';
import { GATEWAY_CONFIG } from '../tokens.js';

/** How long a verified secret is taken on trust (a disabled application is checked on every request anyway). */
const VERIFIED_FOR_MS = 10 * 60 * 1000;
const VERIFIED_CAPACITY = 10000;

/**
 * Checks application secrets against their stored scrypt hashes, with two bounds on what that costs:
 * - at most `TOKEN_HASH_CONCURRENCY` hashes run at once and `TOKEN_HASH_QUEUE` wait; beyond that the
 *   request is answered 503 at once (a flood of bogus requests would otherwise take every core);
 * - a secret that matched is remembered for 10 minutes, keyed by the application id and an HMAC of the
 *   secret under a key made at start (the secret itself is never kept), so a good client's token
 *   requests hash once. The entry holds the stored hash it matched: a rotated secret misses.
 * A secret that does not match always hashes (unknown applications hash a decoy), so a wrong secret
 * costs the same time whether the application exists or not.
 */
@Injectable()
export class SecretVerifier {
  private readonly cacheKey = randomBytes(32);
  private readonly verified = new LRUCache<string, string>({ ...entryBound(VERIFIED_CAPACITY), ttl: VERIFIED_FOR_MS });
  /** The hashes running (at most TOKEN_HASH_CONCURRENCY) and waiting for a turn, first come first served. */
  private readonly hashing: LimitFunction;
  /** Hashes running and waiting at most: TOKEN_HASH_CONCURRENCY + TOKEN_HASH_QUEUE. */
  private readonly hashingCapacity: number;
  private readonly verifications: Counter<'outcome'>;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig, metrics: ServiceMetrics) {
    this.hashing = pLimit(config.TOKEN_HASH_CONCURRENCY);
    this.hashingCapacity = config.TOKEN_HASH_CONCURRENCY + config.TOKEN_HASH_QUEUE;
    this.verifications = new Counter({
      name: 'gateway_secret_verifications_total',
      help: 'Application secrets checked by the token endpoint, by outcome: matched from memory (cached), hashed and matched, hashed and did not match, refused because the hashing queue was full.',
      labelNames: ['outcome'] as const,
      registers: [metrics.registry],
    });
  }

  /** Whether `secret` is the secret of `application` (null: no such application, still hashed). */
  async matches(application: ApplicationEntity | null, secret: string): Promise<boolean> {
    const key = application ? `${application.id}:${createHmac('sha256', this.cacheKey).update(secret).digest('base64url')}` : undefined;
    if (key !== undefined && this.verified.get(key) === application?.secretHash) {
      this.verifications.inc({ outcome: 'cached' });
      return true;
    }
    // p-limit queues without bound; the bound is this check. p-limit counts a task as active or pending
    // from the call on (synchronously), so two requests in one turn cannot both take the last place.
    if (this.hashing.activeCount + this.hashing.pendingCount >= this.hashingCapacity) {
      this.verifications.inc({ outcome: 'refused' });
      throw new DomainError(ErrorCode.ServiceUnavailable, 'Too many credential checks are in progress; retry after the Retry-After delay.');
    }
    const matched = await this.hashing(() => verifySecret(secret, application?.secretHash ?? DECOY_HASH));
    this.verifications.inc({ outcome: matched ? 'matched' : 'mismatched' });
    if (matched && key !== undefined && application) this.verified.set(key, application.secretHash);
    return matched;
  }
}
