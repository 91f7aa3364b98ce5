import { Injectable } from '@nestjs/common';
import { v7 as uuidv7, validate as isUuid } from 'uuid';
import { ApplicationStatus } from './application.entity.js';
import { ApplicationRepository } from './application.repository.js';
import { Role, type RoleAssignment } from './roles.js';
import { generateSecret, hashSecret } from './secret-hash.js';
import { TenantRepository } from './tenant.repository.js';

/** A provisioning request that cannot be carried out; the admin command line prints its message. */
export class ProvisioningError extends Error {
  override name = 'ProvisioningError';
}

export interface ApplicationCredentials {
  applicationId: string;
  applicationSecret: string;
}

/** Provisioning of tenants, accounts and applications (the admin command line's operations). */
@Injectable()
export class IdentityService {
  constructor(
    private readonly tenants: TenantRepository,
    private readonly applications: ApplicationRepository,
  ) {}

  async createTenant(name: string): Promise<{ tenantId: string }> {
    const tenantId = uuidv7();
    await this.tenants.insertTenant({ id: tenantId, name: checkName(name), createdAt: new Date() });
    return { tenantId };
  }

  async createAccount(tenantId: string, name: string): Promise<{ accountId: string }> {
    await this.requireTenant(tenantId);
    const accountId = uuidv7();
    await this.tenants.insertAccount({ id: accountId, tenantId, name: checkName(name), createdAt: new Date() });
    return { accountId };
  }

  async createApplication(
    tenantId: string,
    name: string,
    role: string,
    accountIds: string[] | '*',
  ): Promise<ApplicationCredentials> {
    await this.requireTenant(tenantId);
    if (!Object.values(Role).includes(role as Role)) {
      throw new ProvisioningError(`role must be one of ${Object.values(Role).join(', ')}`);
    }
    if (accountIds !== '*') {
      if (accountIds.length === 0) throw new ProvisioningError('accounts must name at least one account, or be *');
      const bad = accountIds.find((id) => !isUuid(id));
      if (bad !== undefined) throw new ProvisioningError(`account ${bad} does not exist in tenant ${tenantId}`);
      // Lower-case, as the database returns ids and as the account checks compare them.
      accountIds = [...new Set(accountIds.map((id) => id.toLowerCase()))];
      const found = new Set((await this.tenants.findAccounts(tenantId, accountIds)).map((account) => account.id));
      const missing = accountIds.find((id) => !found.has(id));
      if (missing !== undefined) throw new ProvisioningError(`account ${missing} does not exist in tenant ${tenantId}`);
    }
    const assignments: RoleAssignment[] = [{ role: role as Role, accountIds }];
    const applicationSecret = generateSecret();
    const now = new Date();
    const applicationId = uuidv7();
    await this.applications.insert({
      id: applicationId,
      tenantId,
      name: checkName(name),
      secretHash: await hashSecret(applicationSecret),
      status: ApplicationStatus.Active,
      roleAssignments: assignments,
      createdAt: now,
      updatedAt: now,
    });
    return { applicationId, applicationSecret };
  }

  async disableApplication(applicationId: string): Promise<{ applicationId: string; status: ApplicationStatus }> {
    await this.requireApplication(applicationId);
    await this.applications.update(applicationId, { status: ApplicationStatus.Disabled });
    return { applicationId, status: ApplicationStatus.Disabled };
  }

  async rotateSecret(applicationId: string): Promise<ApplicationCredentials> {
    await this.requireApplication(applicationId);
    const applicationSecret = generateSecret();
    await this.applications.update(applicationId, { secretHash: await hashSecret(applicationSecret) });
    return { applicationId, applicationSecret };
  }

  async isEmpty(): Promise<boolean> {
    return (await this.tenants.countTenants()) === 0;
  }

  private async requireTenant(tenantId: string): Promise<void> {
    if (!isUuid(tenantId) || !(await this.tenants.findTenant(tenantId))) {
      throw new ProvisioningError(`tenant ${tenantId} does not exist`);
    }
  }

  private async requireApplication(applicationId: string): Promise<void> {
    if (!isUuid(applicationId) || !(await this.applications.findById(applicationId))) {
      throw new ProvisioningError(`application ${applicationId} does not exist`);
    }
  }
}

function checkName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length < 1 || trimmed.length > 200) throw new ProvisioningError('name must be 1 to 200 characters');
  return trimmed;
}
