import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { AccountScope } from '@tracking/contracts';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal.js';

/** The `{tenantId, accountId}` of a request that passed `AccountAccessGuard`. */
export function accountScopeOf(request: FastifyRequest): AccountScope {
  const { user, params } = request as FastifyRequest<{ Params: { accountId: string } }> & { user: Principal };
  // Lower-case, as the guard checked it: services key locks and cursors on the account id's text.
  return { tenantId: user.tenantId, accountId: params.accountId.toLowerCase() };
}

/** The `{tenantId, accountId}` of a request that passed `AccountAccessGuard`. */
export const Scope = createParamDecorator(
  (_data: unknown, context: ExecutionContext): AccountScope => accountScopeOf(context.switchToHttp().getRequest<FastifyRequest>()),
);
