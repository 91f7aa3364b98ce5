import { applyDecorators, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiParam } from '@nestjs/swagger';
import { JwtAuthGuard } from '../auth/jwt-auth.guard.js';
import { ApiController } from '../http/api-controller.js';
import { AccountAccessGuard } from './account-access.guard.js';

/**
 * A controller under `/v1/accounts/{accountId}/<path>` (or right under the account when `path` is empty),
 * behind authentication and the account checks.
 */
export function AccountController(path: string): ClassDecorator {
  return applyDecorators(
    ApiController(path === '' ? 'v1/accounts/:accountId' : `v1/accounts/:accountId/${path}`),
    UseGuards(JwtAuthGuard, AccountAccessGuard),
    ApiBearerAuth(),
    ApiParam({
      name: 'accountId',
      format: 'uuid',
      description:
        "An account of the token's tenant that the application has a role on: 400 InvalidParameter (AccountNotFound) when it " +
        'does not exist or belongs to another tenant, 403 Forbidden without a role that allows the call.',
    }),
  );
}
