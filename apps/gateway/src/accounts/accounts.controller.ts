import { Get, Query, Req, UseGuards } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyRequest } from 'fastify';
import { JwtAuthGuard } from '../auth/jwt-auth.guard.js';
import type { Principal } from '../auth/principal.js';
import { ApiController } from '../http/api-controller.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { PageQuery } from '../paging/page-query.js';
import { AccountPageDto } from './account.dto.js';
import { AccountsService } from './accounts.service.js';

/** The accounts a token may use: what a client (the console) offers its user to choose from. */
@ApiTags('Accounts')
@ApiController('v1')
@UseGuards(JwtAuthGuard)
@ApiBearerAuth()
export class AccountsController {
  constructor(private readonly accounts: AccountsService) {}

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
  list(@Query() query: PageQuery, @Req() request: FastifyRequest & { user?: Principal }): Promise<AccountPageDto> {
    if (!request.user) throw new DomainError(ErrorCode.Unauthorized, 'A valid access token is required.');
    return this.accounts.list(request.user, query.pageRequest());
  }
}
