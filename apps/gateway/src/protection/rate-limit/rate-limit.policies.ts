import { Inject, Injectable } from '@nestjs/common';
import type { GatewayConfig } from '../../config.js';
import { GATEWAY_CONFIG } from '../../tokens.js';
import type { RateLimit } from '@tracking/rate-limit';

/** The names of the policies, as they appear in the RateLimit headers and 429 details. */
export type PolicyName = 'application' | 'address' | 'token-failures' | 'token-address' | 'readings' | 'public-tracking';

export interface Policy {
  name: PolicyName;
  limit: RateLimit;
}

/** Which limit applies to whom: the configured ones, with the per-tenant overrides. */
@Injectable()
export class RateLimitPolicies {
  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {}

  application(tenantId: string): Policy {
    const limit = this.config.RATE_LIMIT_TENANT_OVERRIDES.get(tenantId.toLowerCase())?.application;
    return { name: 'application', limit: limit ?? this.config.RATE_LIMIT_APPLICATION };
  }

  address(): Policy {
    return { name: 'address', limit: this.config.RATE_LIMIT_ADDRESS };
  }

  /** Failed token requests, per client address and tenant (or application) named in the body. */
  tokenFailures(tenantId: string | undefined): Policy {
    const limit = tenantId === undefined ? undefined : this.config.RATE_LIMIT_TENANT_OVERRIDES.get(tenantId.toLowerCase())?.tokenFailures;
    return { name: 'token-failures', limit: limit ?? this.config.RATE_LIMIT_TOKEN_FAILURES };
  }

  /** Readings per tenant (each entry of a batch is one unit). */
  readings(tenantId: string): Policy {
    const limit = this.config.RATE_LIMIT_TENANT_OVERRIDES.get(tenantId.toLowerCase())?.readings;
    return { name: 'readings', limit: limit ?? this.config.RATE_LIMIT_READINGS };
  }

  /** The share links' public view, per client address (instead of `address`). */
  publicTracking(): Policy {
    return { name: 'public-tracking', limit: this.config.RATE_LIMIT_PUBLIC_TRACKING };
  }

  tokenAddress(): Policy {
    return { name: 'token-address', limit: this.config.RATE_LIMIT_TOKEN_ADDRESS };
  }
}
