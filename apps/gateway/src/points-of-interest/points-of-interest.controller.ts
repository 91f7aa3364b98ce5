import { applyDecorators, Body, Delete, Get, Headers, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiHeader,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiPreconditionFailedResponse,
  ApiQuery,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import {
  type AccountScope,
  type CreatePointOfInterestRequest,
  type DeletePointOfInterestRequest,
  ErrorCode,
  type ItemPage,
  type ListPointsOfInterestRequest,
  type PointOfInterest,
  type PointOfInterestRequest,
  Subjects,
  type UpdatePointOfInterestRequest,
  type Versioned,
} from '@tracking/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { Scope } from '../accounts/account-scope.decorator.js';
import { parseIfMatch, withETag } from '../http/etag.js';
import { ResourceIdPipe } from '../http/resource-id.pipe.js';
import { parsePageQuery } from '../paging/page-query.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import {
  CreatePointOfInterestDto,
  ErrorEnvelopeDto,
  PointOfInterestDto,
  PointOfInterestPageDto,
  UpdatePointOfInterestDto,
} from './dto/point-of-interest.dto.js';

const PointOfInterestId = new ResourceIdPipe(ErrorCode.PointOfInterestNotExists, 'Point of interest');

/** The answers every route of this controller can give besides its success. */
const CommonErrors = () =>
  applyDecorators(
    ApiBadRequestResponse({ type: ErrorEnvelopeDto, description: 'InvalidParameter (a field, or accountId: AccountNotFound) or MalformedRequest.' }),
    ApiUnauthorizedResponse({ description: 'Unauthorized: no, expired or invalid bearer token.' }),
    ApiForbiddenResponse({ type: ErrorEnvelopeDto, description: 'Forbidden: the application has no such permission on the account.' }),
  );
const NotFound = () =>
  ApiNotFoundResponse({
    type: ErrorEnvelopeDto,
    description: 'PointOfInterestNotExists: unknown id, not a UUID, or another account\'s point of interest.',
  });
const IfMatch = () =>
  applyDecorators(
    ApiHeader({ name: 'If-Match', required: false, description: 'ETag from a previous read, or `*`; 412 when stale.' }),
    ApiPreconditionFailedResponse({ type: ErrorEnvelopeDto, description: 'PreconditionFailed: If-Match names another version.' }),
  );

@ApiTags('Points of interest')
@AccountController('points-of-interest')
@CommonErrors()
export class PointsOfInterestController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  @ApiOperation({ summary: 'List points of interest, oldest first, with cursor paging' })
  @ApiQuery({ name: 'cursor', required: false, description: 'metadata.nextCursor of the previous page.' })
  @ApiQuery({ name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } })
  @ApiQuery({ name: 'includeTotal', required: false, schema: { type: 'boolean', default: false } })
  @ApiOkResponse({ type: PointOfInterestPageDto })
  list(
    @Scope() scope: AccountScope,
    @Query() query: Record<string, unknown>,
    @Req() request: FastifyRequest,
  ): Promise<ItemPage<PointOfInterest>> {
    const { page } = parsePageQuery(query);
    return this.services.call(Subjects.oms.pointsOfInterest.list, { ...scope, page } satisfies ListPointsOfInterestRequest, request);
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Create a point of interest' })
  @ApiCreatedResponse({ type: PointOfInterestDto, description: 'Location and ETag headers name the new point of interest.' })
  async create(
    @Scope() scope: AccountScope,
    @Body() body: CreatePointOfInterestDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<PointOfInterest> {
    const created = await this.services.call<Versioned<PointOfInterest>>(
      Subjects.oms.pointsOfInterest.create,
      { ...scope, pointOfInterest: body } satisfies CreatePointOfInterestRequest,
      request,
    );
    reply.header('Location', `/v1/accounts/${scope.accountId}/points-of-interest/${created.resource.id}`);
    return withETag(reply, created);
  }

  @Get(':poiId')
  @ApiOperation({ summary: 'Get one point of interest' })
  @ApiParam({ name: 'poiId', format: 'uuid' })
  @ApiOkResponse({ type: PointOfInterestDto, description: 'The ETag header carries its version.' })
  @NotFound()
  async get(
    @Scope() scope: AccountScope,
    @Param('poiId', PointOfInterestId) pointOfInterestId: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<PointOfInterest> {
    const found = await this.services.call<Versioned<PointOfInterest>>(
      Subjects.oms.pointsOfInterest.get,
      { ...scope, pointOfInterestId } satisfies PointOfInterestRequest,
      request,
    );
    return withETag(reply, found);
  }

  @Patch(':poiId')
  @ApiOperation({ summary: 'Change some fields of a point of interest; honours If-Match' })
  @ApiParam({ name: 'poiId', format: 'uuid' })
  @IfMatch()
  @ApiOkResponse({ type: PointOfInterestDto, description: 'The ETag header carries the new version.' })
  @NotFound()
  async update(
    @Scope() scope: AccountScope,
    @Param('poiId', PointOfInterestId) pointOfInterestId: string,
    @Body() body: UpdatePointOfInterestDto,
    @Headers('if-match') ifMatch: string | undefined,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<PointOfInterest> {
    const updated = await this.services.call<Versioned<PointOfInterest>>(
      Subjects.oms.pointsOfInterest.update,
      { ...scope, pointOfInterestId, patch: body, expectedVersion: parseIfMatch(ifMatch) } satisfies UpdatePointOfInterestRequest,
      request,
    );
    return withETag(reply, updated);
  }

  @Delete(':poiId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a point of interest; honours If-Match' })
  @ApiParam({ name: 'poiId', format: 'uuid' })
  @IfMatch()
  @ApiNoContentResponse({ description: 'Deleted. Closed shipments that referred to it keep a null originId/destinationId.' })
  @NotFound()
  @ApiConflictResponse({
    type: ErrorEnvelopeDto,
    description: 'PointOfInterestInUse: the origin or destination of an ongoing shipment (Planned, InTransit, Delivered).',
  })
  async delete(
    @Scope() scope: AccountScope,
    @Param('poiId', PointOfInterestId) pointOfInterestId: string,
    @Headers('if-match') ifMatch: string | undefined,
    @Req() request: FastifyRequest,
  ): Promise<void> {
    await this.services.call(
      Subjects.oms.pointsOfInterest.delete,
      { ...scope, pointOfInterestId, expectedVersion: parseIfMatch(ifMatch) } satisfies DeletePointOfInterestRequest,
      request,
    );
  }
}
