import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal.js';
import { AccessService } from '../identity/access.service.js';
import { isPermitted, Permission } from '../identity/roles.js';

type AccountRequest = FastifyRequest<{ Params: { accountId?: string } }> & { user?: Principal };

/**
 * The account checks of docs/api.md ("Authentication and roles"), after authentication: an account that
 * does not exist or belongs to another tenant is 400 `AccountNotFound` (never revealing which); then the
 * application's roles must grant read (GET) or write (anything else) on it, else 403.
 */
@Injectable()
export class AccountAccessGuard implements CanActivate {
  constructor(private readonly access: AccessService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AccountRequest>();
    const principal = request.user;
    // UUIDs are case-insensitive but role assignments hold them lower-case, as the database returns them.
    const accountId = (request.params.accountId ?? '').toLowerCase();
    if (!principal) throw new DomainError(ErrorCode.Unauthorized, 'A valid access token is required.');
    if ((await this.access.accountTenant(accountId)) !== principal.tenantId) {
      throw DomainError.invalidParameter(
        'accountId',
        ParameterIssue.AccountNotFound,
        'The account does not exist or is not accessible with this token.',
      );
    }
    const permission = request.method === 'GET' || request.method === 'HEAD' ? Permission.Read : Permission.Write;
    if (!isPermitted(principal.roleAssignments, accountId, permission)) {
      throw new DomainError(ErrorCode.Forbidden, `The application has no ${permission.toLowerCase()} permission on this account.`);
    }
    return true;
  }
}
