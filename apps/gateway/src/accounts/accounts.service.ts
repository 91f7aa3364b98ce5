import { Injectable } from '@nestjs/common';
import type { PageRequest } from '@tracking/contracts';
import type { Principal } from '../auth/principal.js';
import { ROLE_PERMISSIONS, Role, type RoleAssignment } from '../identity/roles.js';
import { TenantRepository } from '../identity/tenant.repository.js';
import type { AccountDto, AccountPageDto } from './account.dto.js';

/** Strongest first: the role shown for an account that several assignments cover. */
const ROLE_STRENGTH: readonly Role[] = [Role.Admin, Role.Operator, Role.Viewer, Role.Ingest];

/** The accounts a caller may use (`GET /v1/accounts`), from its token's role assignments. */
@Injectable()
export class AccountsService {
  constructor(private readonly tenants: TenantRepository) {}

  /** One page of the accounts of the caller's tenant that its roles cover, oldest first, each with its strongest role. */
  async list(principal: Principal, page: PageRequest): Promise<AccountPageDto> {
    // Assignments come from a jsonb column: a role this version does not know grants nothing, as in isPermitted.
    const assignments = principal.roleAssignments.filter((assignment) => ROLE_PERMISSIONS[assignment.role] !== undefined);
    const ids = assignments.some((assignment) => assignment.accountIds === '*')
      ? '*'
      : [...new Set(assignments.flatMap((assignment) => assignment.accountIds as string[]))];
    const found = await this.tenants.findAccountPage(principal.tenantId, principal.applicationId, ids, page);
    return {
      items: found.rows.map((account): AccountDto => ({ id: account.id, name: account.name, role: strongestRole(assignments, account.id) })),
      metadata: found.metadata,
    };
  }
}

function strongestRole(assignments: readonly RoleAssignment[], accountId: string): Role {
  const held = new Set(assignments.filter((a) => a.accountIds === '*' || a.accountIds.includes(accountId)).map((a) => a.role));
  // The account was listed because an assignment covers it, so one of the known roles is held.
  return ROLE_STRENGTH.find((role) => held.has(role)) ?? Role.Viewer;
}
