import { Inject, Injectable } from '@nestjs/common';
import { entryBound } from '@tracking/core';
import { LRUCache } from 'lru-cache';
import { validate as isUuid } from 'uuid';
import { GATEWAY_CONFIG } from '../tokens.js';
import type { GatewayConfig } from '../config.js';
import { ApplicationStatus } from './application.entity.js';
import { ApplicationRepository } from './application.repository.js';
import type { RoleAssignment } from './roles.js';
import { TenantRepository } from './tenant.repository.js';

export interface ApplicationAccess {
  tenantId: string;
  active: boolean;
  roleAssignments: RoleAssignment[];
}

/**
 * The identity lookups on every request, cached for `IDENTITY_CACHE_TTL_MS` (at most 60 s): so a
 * disabled application or a changed role takes effect on every gateway replica within that time. The cache
 * saves two identity-database queries per request (speed machinery, docs/architecture.md).
 */
@Injectable()
export class AccessService {
  /** Misses are cached too (`found: null`): a flood of unknown application ids costs one query each per TTL. */
  private readonly applicationCache: Cache<{ found: ApplicationAccess | null }>;
  private readonly accountCache: Cache<string>;

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    private readonly applications: ApplicationRepository,
    private readonly tenants: TenantRepository,
  ) {
    this.applicationCache = newCache(config.IDENTITY_CACHE_TTL_MS);
    this.accountCache = newCache(config.IDENTITY_CACHE_TTL_MS);
  }

  async application(applicationId: string): Promise<ApplicationAccess | null> {
    const cached = this.applicationCache?.get(applicationId);
    if (cached !== undefined) return cached.found;
    const entity = isUuid(applicationId) ? await this.applications.findById(applicationId) : null;
    const access = entity && {
      tenantId: entity.tenantId,
      active: entity.status === ApplicationStatus.Active,
      roleAssignments: entity.roleAssignments,
    };
    this.applicationCache?.set(applicationId, { found: access });
    return access;
  }

  /** The tenant owning `accountId`, or null when there is no such account. */
  async accountTenant(accountId: string): Promise<string | null> {
    const cached = this.accountCache?.get(accountId);
    if (cached !== undefined) return cached;
    if (!isUuid(accountId)) return null;
    const account = await this.tenants.findAccount(accountId);
    // Only hits are cached, so an account created a moment ago is found at once.
    if (account) this.accountCache?.set(accountId, account.tenantId);
    return account?.tenantId ?? null;
  }
}

/** How many entries each identity cache holds; the least recently used goes first. */
const CACHE_CAPACITY = 10000;

/** No cache at all when the TTL is 0 (lru-cache would read a TTL of 0 as "never expires"). */
type Cache<V extends object | string> = LRUCache<string, V> | undefined;

function newCache<V extends object | string>(ttlMs: number): Cache<V> {
  return ttlMs > 0 ? new LRUCache<string, V>({ ...entryBound(CACHE_CAPACITY), ttl: ttlMs }) : undefined;
}
