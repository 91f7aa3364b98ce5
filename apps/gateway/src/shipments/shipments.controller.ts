import { Body, Get, Headers, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import {
  type AccountScope,
  ErrorCode,
  type ShipmentPage,
  Subjects,
  type VersionedShipment,
} from '@tracking/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { Scope } from '../accounts/account-scope.decorator.js';
import { etag, parseIfMatch } from '../http/etag.js';
import { ResourceIdPipe } from '../http/resource-id.pipe.js';
import { parsePageQuery } from '../paging/page-query.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { CreateShipmentDto, ShipmentDto, ShipmentPageDto, UpdateShipmentDto } from './dto/shipment.dto.js';

const ShipmentId = new ResourceIdPipe(ErrorCode.ShipmentNotExists, 'Shipment');

@ApiTags('Shipments')
@AccountController('shipments')
export class ShipmentsController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  @ApiOperation({ summary: 'List shipments, oldest first, with cursor paging' })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiQuery({ name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } })
  @ApiQuery({ name: 'includeTotal', required: false, schema: { type: 'boolean', default: false } })
  @ApiOkResponse({ type: ShipmentPageDto })
  list(@Scope() scope: AccountScope, @Query() query: Record<string, unknown>, @Req() request: FastifyRequest): Promise<ShipmentPage> {
    const { page } = parsePageQuery(query);
    return this.services.call(Subjects.oms.shipments.list, { ...scope, page }, request);
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Create a shipment (status Planned)' })
  @ApiCreatedResponse({ type: ShipmentDto, description: 'Location and ETag headers name the new shipment.' })
  async create(
    @Scope() scope: AccountScope,
    @Body() body: CreateShipmentDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ShipmentDto> {
    const { shipment, version } = await this.services.call<VersionedShipment>(
      Subjects.oms.shipments.create,
      { ...scope, shipment: { name: body.name } },
      request,
    );
    reply.header('Location', `/v1/accounts/${scope.accountId}/shipments/${shipment.id}`).header('ETag', etag(version));
    return shipment;
  }

  @Get(':shipmentId')
  @ApiOperation({ summary: 'Get one shipment' })
  @ApiOkResponse({ type: ShipmentDto })
  async get(
    @Scope() scope: AccountScope,
    @Param('shipmentId', ShipmentId) shipmentId: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ShipmentDto> {
    const { shipment, version } = await this.services.call<VersionedShipment>(
      Subjects.oms.shipments.get,
      { ...scope, shipmentId },
      request,
    );
    reply.header('ETag', etag(version));
    return shipment;
  }

  @Patch(':shipmentId')
  @ApiOperation({ summary: 'Change a shipment; honours If-Match' })
  @ApiHeader({ name: 'If-Match', required: false, description: 'ETag from a previous read; 412 when stale.' })
  @ApiOkResponse({ type: ShipmentDto })
  async update(
    @Scope() scope: AccountScope,
    @Param('shipmentId', ShipmentId) shipmentId: string,
    @Body() body: UpdateShipmentDto,
    @Headers('if-match') ifMatch: string | undefined,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ShipmentDto> {
    const { shipment, version } = await this.services.call<VersionedShipment>(
      Subjects.oms.shipments.update,
      { ...scope, shipmentId, patch: { name: body.name }, expectedVersion: parseIfMatch(ifMatch) },
      request,
    );
    reply.header('ETag', etag(version));
    return shipment;
  }
}
