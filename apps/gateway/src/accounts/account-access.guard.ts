import { type CanActivate, type ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal.js';
import { AccessService } from '../identity/access.service.js';
import { isPermitted, Permission } from '../identity/roles.js';

const REQUIRED_PERMISSION = 'tracking:requiredPermission';

/** The permission a route needs instead of the one its method implies (Read for GET and HEAD, else Write). */
export const Requires = (permission: Permission) => SetMetadata(REQUIRED_PERMISSION, permission);

/** The permission `@Requires` gave a route handler, if any. */
export function requiredPermissionOf(handler: object): Permission | undefined {
  return Reflect.getMetadata(REQUIRED_PERMISSION, handler) as Permission | undefined;
}

/** The permission a request needs without `@Requires`: Read for GET and HEAD, else Write. */
export function methodPermission(method: string): Permission {
  return method === 'GET' || method === 'HEAD' ? Permission.Read : Permission.Write;
}

/**
 * The account checks: 400 `AccountNotFound` for an account of another tenant (or none), 403 without
 * `permission` on it. Used by the guard, and before a body is read (`http/body-admission.ts`).
 */
export async function checkAccountAccess(access: AccessService, principal: Principal, rawAccountId: string, permission: Permission): Promise<void> {
  // UUIDs are case-insensitive but role assignments hold them lower-case, as the database returns them.
  const accountId = rawAccountId.toLowerCase();
  if ((await access.accountTenant(accountId)) !== principal.tenantId) {
    throw DomainError.invalidParameter('accountId', ParameterIssue.AccountNotFound, 'The account does not exist or is not accessible with this token.');
  }
  if (!isPermitted(principal.roleAssignments, accountId, permission)) {
    throw new DomainError(ErrorCode.Forbidden, `The application has no ${permission.toLowerCase()} permission on this account.`);
  }
}

type AccountRequest = FastifyRequest<{ Params: { accountId?: string } }> & { user?: Principal };

/**
 * The account checks of docs/api.md ("Authentication and roles"), after authentication: an account that
 * does not exist or belongs to another tenant is 400 `AccountNotFound` (never revealing which); then the
 * application's roles must grant read (GET), write (anything else) or the route's own permission
 * (`@Requires`, e.g. Ingest for `POST /readings`) on it, else 403.
 */
@Injectable()
export class AccountAccessGuard implements CanActivate {
  constructor(
    private readonly access: AccessService,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AccountRequest>();
    const principal = request.user;
    if (!principal) throw new DomainError(ErrorCode.Unauthorized, 'A valid access token is required.');
    const permission = this.reflector.get<Permission | undefined>(REQUIRED_PERMISSION, context.getHandler()) ?? methodPermission(request.method);
    await checkAccountAccess(this.access, principal, request.params.accountId ?? '', permission);
    return true;
  }
}
