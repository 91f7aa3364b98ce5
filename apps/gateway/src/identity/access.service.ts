import { Inject, Injectable } from '@nestjs/common';
import { validate as isUuid } from 'uuid';
import { GATEWAY_CONFIG } from '../tokens.js';
import type { GatewayConfig } from '../config.js';
import { ApplicationStatus } from './application.entity.js';
import { ApplicationRepository } from './application.repository.js';
import type { RoleAssignment } from './roles.js';
import { TenantRepository } from './tenant.repository.js';
import { TtlCache } from './ttl-cache.js';

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
  private readonly applicationCache: TtlCache<ApplicationAccess | null>;
  private readonly accountCache: TtlCache<string>;

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    private readonly applications: ApplicationRepository,
    private readonly tenants: TenantRepository,
  ) {
    this.applicationCache = new TtlCache(config.IDENTITY_CACHE_TTL_MS);
    this.accountCache = new TtlCache(config.IDENTITY_CACHE_TTL_MS);
  }

  async application(applicationId: string): Promise<ApplicationAccess | null> {
    const cached = this.applicationCache.get(applicationId);
    if (cached !== undefined) return cached;
    const entity = isUuid(applicationId) ? await this.applications.findById(applicationId) : null;
    const access = entity && {
      tenantId: entity.tenantId,
      active: entity.status === ApplicationStatus.Active,
      roleAssignments: entity.roleAssignments,
    };
    this.applicationCache.set(applicationId, access);
    return access;
  }

  /** The tenant owning `accountId`, or null when there is no such account. */
  async accountTenant(accountId: string): Promise<string | null> {
    const cached = this.accountCache.get(accountId);
    if (cached !== undefined) return cached;
    if (!isUuid(accountId)) return null;
    const account = await this.tenants.findAccount(accountId);
    // Only hits are cached, so an account created a moment ago is found at once.
    if (account) this.accountCache.set(accountId, account.tenantId);
    return account?.tenantId ?? null;
  }
}
