import { Get, Query, Req, UseGuards } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyRequest } from 'fastify';
import { JwtAuthGuard } from '../auth/jwt-auth.guard.js';
import type { Principal } from '../auth/principal.js';
import { ApiController } from '../http/api-controller.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { ROLE_PERMISSIONS, Role, type RoleAssignment } from '../identity/roles.js';
import { TenantRepository } from '../identity/tenant.repository.js';
import { PageQuery } from '../paging/page-query.js';
import { AccountPageDto, type AccountDto } from './account.dto.js';

/** Strongest first: the role shown for an account that several assignments cover. */
const ROLE_STRENGTH: readonly Role[] = [Role.Admin, Role.Operator, Role.Viewer, Role.Ingest];

/** The accounts a token may use: what a client (the console) offers its user to choose from. */
@ApiTags('Accounts')
@ApiController('v1')
@UseGuards(JwtAuthGuard)
@ApiBearerAuth()
export class AccountsController {
  constructor(private readonly tenants: TenantRepository) {}

  @Get('accounts')
  @ApiOperation({
    summary: "List the accounts of the token's tenant on which the application holds a role, with cursor paging",
    description:
      'Any valid token. Accounts of other tenants, and accounts of the tenant the application has no role on, are never listed. ' +
      'Oldest first; `role` is the strongest role the application holds on each.',
  })
  @ApiOkResponse({ type: AccountPageDto, description: 'The accounts under `items`, next to `metadata`.' })
  @ApiBadRequestResponse({ type: ErrorEnvelopeDto, description: 'InvalidParameter: limit, includeTotal or cursor (InvalidCursor), or an unknown parameter.' })
  @ApiUnauthorizedResponse({ description: 'Unauthorized: no, expired or invalid bearer token.' })
  async list(@Query() query: PageQuery, @Req() request: FastifyRequest & { user?: Principal }): Promise<AccountPageDto> {
    const principal = request.user;
    if (!principal) throw new DomainError(ErrorCode.Unauthorized, 'A valid access token is required.');
    // Assignments come from a jsonb column: a role this version does not know grants nothing, as in isPermitted.
    const assignments = principal.roleAssignments.filter((assignment) => ROLE_PERMISSIONS[assignment.role] !== undefined);
    const ids = assignments.some((assignment) => assignment.accountIds === '*')
      ? '*'
      : [...new Set(assignments.flatMap((assignment) => assignment.accountIds as string[]))];
    const page = await this.tenants.findAccountPage(principal.tenantId, principal.applicationId, ids, query.pageRequest());
    return {
      items: page.rows.map((account): AccountDto => ({ id: account.id, name: account.name, role: strongestRole(assignments, account.id) })),
      metadata: page.metadata,
    };
  }
}

function strongestRole(assignments: readonly RoleAssignment[], accountId: string): Role {
  const held = new Set(assignments.filter((a) => a.accountIds === '*' || a.accountIds.includes(accountId)).map((a) => a.role));
  // The account was listed because an assignment covers it, so one of the known roles is held.
  return ROLE_STRENGTH.find((role) => held.has(role)) ?? Role.Viewer;
}
