import { Body, Delete, Get, Headers, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import {
  type AccountScope,
  ErrorCode,
  type ItemPage,
  type PointOfInterest,
  Subjects,
} from '@tracking/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { Scope } from '../accounts/account-scope.decorator.js';
import { ApiAccountErrors, ApiIfMatch, ApiNotFound } from '../http/api-responses.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { parseIfMatch, withETag } from '../http/etag.js';
import { ResourceIdPipe } from '../http/resource-id.pipe.js';
import { PageQuery } from '../paging/page-query.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import {
  CreatePointOfInterestDto,
  PointOfInterestDto,
  PointOfInterestPageDto,
  UpdatePointOfInterestDto,
} from './dto/point-of-interest.dto.js';

const PointOfInterestId = new ResourceIdPipe(ErrorCode.PointOfInterestNotExists, 'Point of interest');

const NotFound = () =>
  ApiNotFound("PointOfInterestNotExists: unknown id, not a UUID, or another account's point of interest.");

@ApiTags('Points of interest')
@AccountController('points-of-interest')
@ApiAccountErrors()
export class PointsOfInterestController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  @ApiOperation({ summary: 'List points of interest, oldest first, with cursor paging' })
  @ApiOkResponse({ type: PointOfInterestPageDto, description: 'The points of interest under `items`, next to `metadata`.' })
  list(
    @Scope() scope: AccountScope,
    @Query() query: PageQuery,
    @Req() request: FastifyRequest,
  ): Promise<ItemPage<PointOfInterest>> {
    const page = query.pageRequest();
    return this.services.call(Subjects.oms.pointsOfInterest.list, { ...scope, page }, request);
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
    const created = await this.services.call(
      Subjects.oms.pointsOfInterest.create,
      { ...scope, pointOfInterest: body },
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
    const found = await this.services.call(
      Subjects.oms.pointsOfInterest.get,
      { ...scope, pointOfInterestId },
      request,
    );
    return withETag(reply, found);
  }

  @Patch(':poiId')
  @ApiOperation({ summary: 'Change some fields of a point of interest; honours If-Match' })
  @ApiParam({ name: 'poiId', format: 'uuid' })
  @ApiIfMatch()
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
    const updated = await this.services.call(
      Subjects.oms.pointsOfInterest.update,
      { ...scope, pointOfInterestId, patch: body, expectedVersion: parseIfMatch(ifMatch) },
      request,
    );
    return withETag(reply, updated);
  }

  @Delete(':poiId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a point of interest; honours If-Match' })
  @ApiParam({ name: 'poiId', format: 'uuid' })
  @ApiIfMatch()
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
      { ...scope, pointOfInterestId, expectedVersion: parseIfMatch(ifMatch) },
      request,
    );
  }
}
