import { Body, Delete, Get, Headers, HttpCode, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type Item,
  type ItemPage,
  type ItemRequest,
  type SetRequest,
  Subjects,
} from '@tracking/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { ApiAccountErrors, ApiIfMatch, ApiNotFound } from '../http/api-responses.js';
import { parseIfMatch, withETag } from '../http/etag.js';
import { PageQuery } from '../paging/page-query.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import {
  ApiItemParam,
  ApiSetParam,
  ApiShipmentClosed,
  ApiShipmentParam,
  ITEM_NOT_FOUND,
  ItemPath,
  SET_NOT_FOUND,
  SetPath,
} from '../sets/shipment-contents.decorator.js';
import { CreateItemDto, ItemDto, ItemPageDto, UpdateItemDto } from './dto/item.dto.js';

@ApiTags('Items')
@AccountController('shipments/:shipmentId/sets/:setId/items')
@ApiAccountErrors()
@ApiShipmentParam()
@ApiSetParam()
export class ItemsController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  @ApiOperation({ summary: "List a set's items, oldest first, with cursor paging" })
  @ApiOkResponse({ type: ItemPageDto, description: 'The items under `items`, next to `metadata`.' })
  @ApiNotFound(SET_NOT_FOUND)
  list(@SetPath() set: SetRequest, @Query() query: PageQuery, @Req() request: FastifyRequest): Promise<ItemPage<Item>> {
    const page = query.pageRequest();
    return this.services.call(Subjects.oms.items.list, { ...set, page }, request);
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Add an item to a set' })
  @ApiCreatedResponse({ type: ItemDto, description: 'Location and ETag headers name the new item.' })
  @ApiNotFound(SET_NOT_FOUND)
  @ApiShipmentClosed()
  async create(
    @SetPath() set: SetRequest,
    @Body() body: CreateItemDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Item> {
    const target = { ...set, item: body };
    const created = await this.services.call(Subjects.oms.items.create, target, request);
    const item = created.resource;
    reply.header('Location', `/v1/accounts/${set.accountId}/shipments/${item.shipmentId}/sets/${item.setId}/items/${item.id}`);
    return withETag(reply, created);
  }

  @Get(':itemId')
  @ApiOperation({ summary: 'Get one item of a set' })
  @ApiItemParam()
  @ApiOkResponse({ type: ItemDto, description: 'The ETag header carries its version.' })
  @ApiNotFound(ITEM_NOT_FOUND)
  async get(@ItemPath() item: ItemRequest, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<Item> {
    return withETag(reply, await this.services.call(Subjects.oms.items.get, item, request));
  }

  @Patch(':itemId')
  @ApiOperation({ summary: 'Change some fields of an item; honours If-Match' })
  @ApiItemParam()
  @ApiIfMatch()
  @ApiOkResponse({ type: ItemDto, description: 'The ETag header carries the new version.' })
  @ApiNotFound(ITEM_NOT_FOUND)
  @ApiShipmentClosed()
  async update(
    @ItemPath() item: ItemRequest,
    @Body() body: UpdateItemDto,
    @Headers('if-match') ifMatch: string | undefined,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Item> {
    const target = { ...item, patch: body, expectedVersion: parseIfMatch(ifMatch) };
    return withETag(reply, await this.services.call(Subjects.oms.items.update, target, request));
  }

  @Delete(':itemId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete an item; honours If-Match' })
  @ApiItemParam()
  @ApiIfMatch()
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiNotFound(ITEM_NOT_FOUND)
  @ApiShipmentClosed()
  async delete(
    @ItemPath() item: ItemRequest,
    @Headers('if-match') ifMatch: string | undefined,
    @Req() request: FastifyRequest,
  ): Promise<void> {
    const target = { ...item, expectedVersion: parseIfMatch(ifMatch) };
    await this.services.call(Subjects.oms.items.delete, target, request);
  }
}
