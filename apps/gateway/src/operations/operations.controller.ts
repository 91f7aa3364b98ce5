import { Body, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import { RouteConfig } from '@nestjs/platform-fastify';
import {
  type AccountScope,
  type CreateOperationRequest,
  ErrorCode,
  type Operation,
  type OperationPage,
  type OperationResultPage,
  type Versioned,
  OperationType,
  Subjects,
  UNFINISHED_OPERATION_STATUSES,
} from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { Scope } from '../accounts/account-scope.decorator.js';
import { BULK_BODY_LIMIT_BYTES } from '../config.js';
import { ApiAccountErrors, ApiNotFound } from '../http/api-responses.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { withETag } from '../http/etag.js';
import { ResourceIdPipe } from '../http/resource-id.pipe.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { parseBulkAssignBody, parseBulkRetireBody } from './bulk-body.js';
import { BulkAssignDto, BulkRetireDto, OperationDto, OperationPageDto, OperationResultPageDto } from './dto/operation.dto.js';
import { ListOperationResultsQuery, ListOperationsQuery } from './operation-query.js';

/** Retry-After of a bulk request refused by an account quota (unfinished operations or pending entries). */
export const QUOTA_RETRY_AFTER_S = 5;
const QUOTAS =
  'An account over its quota of unfinished operations or of entries waiting in them gets 429 RateLimitExceeded ' +
  '(details.policy unfinished-operations or pending-entries) with Retry-After; nothing is recorded.';
const OperationIdPipe = new ResourceIdPipe(ErrorCode.OperationNotExists, 'Operation');
const BULK_BODY = { bodyLimit: BULK_BODY_LIMIT_BYTES };
const NO_OPERATION = "OperationNotExists: unknown id, not a UUID, or another account's operation.";
const ACCEPTED =
  'Recorded; the work runs in the background. Location names the operation (also in the body, as `url`); ' +
  'Retry-After suggests when to look.';
const INVALID_BULK =
  'InvalidParameter for the request as a whole, nothing is recorded: a missing or unknown field, a list of ' +
  'the wrong size (OutOfRange), an id that is not a UUID (InvalidFormat), a device named twice (Duplicate, ' +
  'field names the later entry); MalformedRequest: not a JSON object. Entries that name unknown sets or ' +
  'devices are not refused here: each gets its own result.';

/** Every route of bulk operations: the two bulk requests, and following their operations. */
@ApiTags('Operations')
@AccountController('')
@ApiAccountErrors()
export class OperationsController {
  constructor(private readonly services: ServiceClient) {}

  @Post('sets/bulk-assign')
  @HttpCode(202)
  @RouteConfig(BULK_BODY)
  @ApiOperation({
    summary: 'Assign up to 10000 devices to sets, in the background',
    description:
      'Each entry is judged exactly as PUT /shipments/{shipmentId}/sets/{setId}/devices/{deviceId} would judge ' +
      "it (SetNotExists, ShipmentClosed, DeviceNotExists, DeviceRetired, DeviceAlreadyAssigned), in the entries' order. " +
      'Bodies up to 4 MiB. ' + QUOTAS,
  })
  @ApiBody({ type: BulkAssignDto })
  @ApiAcceptedResponse({ type: OperationDto, description: ACCEPTED })
  @ApiBadRequestResponse({ type: ErrorEnvelopeDto, description: INVALID_BULK })
  bulkAssign(
    @Scope() scope: AccountScope,
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Operation> {
    const assignments = parseBulkAssignBody(body);
    return this.start({ ...scope, type: OperationType.BulkSetAssignment, assignments }, request, reply);
  }

  @Post('devices/bulk-retire')
  @HttpCode(202)
  @RouteConfig(BULK_BODY)
  @ApiOperation({
    summary: 'Retire up to 10000 devices, in the background',
    description:
      'Each entry is judged exactly as POST /devices/{deviceId}/retire would judge it (DeviceNotExists, DeviceAssigned, ' +
      'DeviceRetired). Bodies up to 4 MiB. ' + QUOTAS,
  })
  @ApiBody({ type: BulkRetireDto })
  @ApiAcceptedResponse({ type: OperationDto, description: ACCEPTED })
  @ApiBadRequestResponse({ type: ErrorEnvelopeDto, description: INVALID_BULK })
  bulkRetire(
    @Scope() scope: AccountScope,
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Operation> {
    const deviceIds = parseBulkRetireBody(body);
    return this.start({ ...scope, type: OperationType.BulkRetire, deviceIds }, request, reply);
  }

  @Get('operations')
  @ApiOperation({ summary: 'List operations, oldest first, with cursor paging; filters combine with AND' })
  @ApiOkResponse({ type: OperationPageDto, description: 'The operations under `items`, next to `metadata`.' })
  list(@Scope() scope: AccountScope, @Query() query: ListOperationsQuery, @Req() request: FastifyRequest): Promise<OperationPage> {
    const page = query.pageRequest();
    const filters = query.filters();
    return this.services.call(Subjects.oms.operations.list, { ...scope, page, filters }, request);
  }

  @Get('operations/:operationId')
  @ApiOperation({ summary: 'Get one operation: its status and progress' })
  @ApiParam({ name: 'operationId', format: 'uuid' })
  @ApiOkResponse({ type: OperationDto, description: 'Retry-After: 1 while it is Pending or Running; the ETag header carries its version.' })
  @ApiNotFound(NO_OPERATION)
  async get(
    @Scope() scope: AccountScope,
    @Param('operationId', OperationIdPipe) operationId: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Operation> {
    const found = await this.services.call(
      Subjects.oms.operations.get,
      { ...scope, operationId },
      request,
    );
    if (UNFINISHED_OPERATION_STATUSES.includes(found.resource.status)) reply.header('Retry-After', '1');
    return withETag(reply, found);
  }

  @Get('operations/:operationId/results')
  @ApiOperation({
    summary: "An operation's results: one per processed entry, in the entries' order",
    description: 'Results appear as entries are processed; entries skipped by a cancel have none.',
  })
  @ApiParam({ name: 'operationId', format: 'uuid' })
  @ApiOkResponse({ type: OperationResultPageDto, description: 'The results under `items`, next to `metadata`.' })
  @ApiNotFound(NO_OPERATION)
  results(
    @Scope() scope: AccountScope,
    @Param('operationId', OperationIdPipe) operationId: string,
    @Query() query: ListOperationResultsQuery,
    @Req() request: FastifyRequest,
  ): Promise<OperationResultPage> {
    const page = query.pageRequest();
    const status = query.resultStatus();
    return this.services.call(
      Subjects.oms.operations.results,
      { ...scope, operationId, page, filters: { status } },
      request,
    );
  }

  @Post('operations/:operationId/cancel')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Cancel a Pending or Running operation',
    description: 'Entries not processed yet are skipped; the entry chunk in progress (up to 1000 entries) finishes first.',
  })
  @ApiParam({ name: 'operationId', format: 'uuid' })
  @ApiNoContentResponse({ description: 'Cancelled: its status is Cancelled.' })
  @ApiNotFound(NO_OPERATION)
  @ApiConflictResponse({ type: ErrorEnvelopeDto, description: 'OperationFinished: it has already finished or been cancelled.' })
  async cancel(
    @Scope() scope: AccountScope,
    @Param('operationId', OperationIdPipe) operationId: string,
    @Req() request: FastifyRequest,
  ): Promise<void> {
    await this.services.call(Subjects.oms.operations.cancel, { ...scope, operationId }, request);
  }

  private async start(operation: CreateOperationRequest, request: FastifyRequest, reply: FastifyReply): Promise<Operation> {
    let created: Versioned<Operation>;
    try {
      created = await this.services.call(Subjects.oms.operations.create, operation, request);
    } catch (error) {
      // An account quota of the OMS: it clears as workers finish, so a retry a few seconds later may pass.
      if (error instanceof DomainError && error.code === ErrorCode.RateLimitExceeded) reply.header('Retry-After', String(QUOTA_RETRY_AFTER_S));
      throw error;
    }
    reply.header('Location', created.resource.url);
    reply.header('Retry-After', '1');
    return withETag(reply, created);
  }
}
