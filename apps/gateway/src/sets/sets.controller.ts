import { Body, Delete, Get, Headers, HttpCode, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type ItemPage,
  type SetRequest,
  type ShipmentScope,
  type ShipmentSet,
  Subjects,
  type Versioned,
} from '@tracking/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { ApiAccountErrors, ApiIfMatch, ApiNotFound } from '../http/api-responses.js';
import { parseIfMatch, withETag } from '../http/etag.js';
import { PageQuery } from '../paging/page-query.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { withDeviceIds } from './set-devices.js';
import { CreateSetDto, SetDto, SetPageDto, UpdateSetDto } from './dto/set.dto.js';
import {
  ApiSetParam,
  ApiShipmentClosed,
  ApiShipmentParam,
  SET_NOT_FOUND,
  SetPath,
  SHIPMENT_NOT_FOUND,
  ShipmentPath,
} from './shipment-contents.decorator.js';

@ApiTags('Sets')
@AccountController('shipments/:shipmentId/sets')
@ApiAccountErrors()
@ApiShipmentParam()
export class SetsController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  @ApiOperation({ summary: "List a shipment's sets, oldest first, with cursor paging" })
  @ApiOkResponse({ type: SetPageDto, description: 'The sets under `items`, each with its `deviceIds`, next to `metadata`.' })
  @ApiNotFound(SHIPMENT_NOT_FOUND)
  async list(
    @ShipmentPath() shipment: ShipmentScope,
    @Query() query: PageQuery,
    @Req() request: FastifyRequest,
  ): Promise<ItemPage<ShipmentSet>> {
    const page = query.pageRequest();
    const target = { ...shipment, page };
    const found = await this.services.call(Subjects.oms.sets.list, target, request);
    return { ...found, items: await withDeviceIds(this.services, shipment, found.items, request) };
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Add a set to a shipment' })
  @ApiCreatedResponse({ type: SetDto, description: 'Location and ETag headers name the new set.' })
  @ApiNotFound(SHIPMENT_NOT_FOUND)
  @ApiShipmentClosed()
  async create(
    @ShipmentPath() shipment: ShipmentScope,
    @Body() body: CreateSetDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ShipmentSet> {
    const target = { ...shipment, set: body };
    const created = await this.services.call(Subjects.oms.sets.create, target, request);
    const set = created.resource;
    reply.header('Location', `/v1/accounts/${shipment.accountId}/shipments/${set.shipmentId}/sets/${set.id}`);
    return withETag(reply, created);
  }

  @Get(':setId')
  @ApiOperation({ summary: 'Get one set of a shipment' })
  @ApiSetParam()
  @ApiOkResponse({ type: SetDto, description: 'The ETag header carries its version.' })
  @ApiNotFound(SET_NOT_FOUND)
  async get(
    @SetPath() set: SetRequest,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ShipmentSet> {
    const found = await this.services.call(Subjects.oms.sets.get, set, request);
    return withETag(reply, await this.withDeviceIds(set, found, request));
  }

  @Patch(':setId')
  @ApiOperation({ summary: 'Change the name or kind of a set; honours If-Match' })
  @ApiSetParam()
  @ApiIfMatch()
  @ApiOkResponse({ type: SetDto, description: 'The ETag header carries the new version.' })
  @ApiNotFound(SET_NOT_FOUND)
  @ApiShipmentClosed()
  async update(
    @SetPath() set: SetRequest,
    @Body() body: UpdateSetDto,
    @Headers('if-match') ifMatch: string | undefined,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ShipmentSet> {
    const target = { ...set, patch: body, expectedVersion: parseIfMatch(ifMatch) };
    const updated = await this.services.call(Subjects.oms.sets.update, target, request);
    return withETag(reply, await this.withDeviceIds(set, updated, request));
  }

  @Delete(':setId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a set and its items; honours If-Match' })
  @ApiSetParam()
  @ApiIfMatch()
  @ApiNoContentResponse({ description: 'Deleted, with every item of the set.' })
  @ApiNotFound(SET_NOT_FOUND)
  @ApiShipmentClosed()
  async delete(
    @SetPath() set: SetRequest,
    @Headers('if-match') ifMatch: string | undefined,
    @Req() request: FastifyRequest,
  ): Promise<void> {
    const target = { ...set, expectedVersion: parseIfMatch(ifMatch) };
    await this.services.call(Subjects.oms.sets.delete, target, request);
  }

  /** A set read from the OMS with its `deviceIds` from the DMS (a new set has none: create answers `[]`). */
  private async withDeviceIds(scope: SetRequest, found: Versioned<ShipmentSet>, request: FastifyRequest): Promise<Versioned<ShipmentSet>> {
    const [resource = found.resource] = await withDeviceIds(this.services, scope, [found.resource], request);
    return { ...found, resource };
  }
}
