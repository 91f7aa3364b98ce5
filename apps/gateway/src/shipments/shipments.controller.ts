import { applyDecorators, Body, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
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
  type ItemPage,
  type Shipment,
  ShipmentAction,
  Subjects,
} from '@tracking/contracts';
import type { JsonBytes } from '@tracking/messaging';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { Scope } from '../accounts/account-scope.decorator.js';
import { ApiAccountErrors, ApiIfMatch, ApiNotFound } from '../http/api-responses.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { etag, withETag } from '../http/etag.js';
import { jsonBody } from '../http/json-body.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { ListShipmentsQuery } from './dto/shipment-query.js';
import { CreateShipmentDto, ShipmentDto, ShipmentPageDto, UpdateShipmentDto } from './dto/shipment.dto.js';
import { ShipmentIdPipe, TargetShipment, type ShipmentTarget } from './shipment-target.decorator.js';

/** The 404 of every route on one shipment, with its path parameter. */
const OneShipment = () =>
  applyDecorators(
    ApiParam({ name: 'shipmentId', format: 'uuid' }),
    ApiNotFound("ShipmentNotExists: unknown id, not a UUID, or another account's shipment."),
  );

const INVALID_BODY =
  'InvalidParameter: a field breaks its rule (Required, InvalidFormat, OutOfRange, UnknownField, ReadOnly), ' +
  'originId/destinationId name no point of interest of the account (UnknownReference), or plannedArrivalAt ' +
  'is before plannedDepartureAt (OutOfRange); MalformedRequest: the body is not a JSON object; ' +
  'accountId: AccountNotFound.';

/** A lifecycle action: `POST /shipments/{shipmentId}/<action>`, 204 when it moves the shipment on. */
/** The statuses each action starts from, for the examples (the OMS's state table decides). */
const NEEDS: Record<ShipmentAction, string> = {
  [ShipmentAction.Start]: 'Planned',
  [ShipmentAction.Deliver]: 'InTransit',
  [ShipmentAction.Complete]: 'Delivered',
  [ShipmentAction.Cancel]: 'Planned or InTransit',
};

const Transition = (action: ShipmentAction, summary: string) =>
  applyDecorators(
    Post(`:shipmentId/${action}`),
    HttpCode(204),
    ApiOperation({
      summary,
      description:
        'Answers 204 without a body; the ETag header carries the new version. If-Match is optional. ' +
        'Of concurrent actions on one shipment exactly one succeeds; the others find its new status and get 409.',
    }),
    OneShipment(),
    ApiIfMatch(),
    ApiNoContentResponse({ description: 'Done; the ETag header carries the new version.' }),
    ApiConflictResponse({
      type: ErrorEnvelopeDto,
      description: `InvalidStateTransition: the shipment's status does not allow ${action}; details name the status and the action.`,
      example: {
        error: {
          id: '0190a4a0-0000-7000-8000-000000000001',
          code: 'InvalidStateTransition',
          message: `Cannot ${action} the shipment: its status is Completed; ${action} needs ${NEEDS[action]}.`,
          details: { from: 'Completed', action },
        },
      },
    }),
  );

@ApiTags('Shipments')
@AccountController('shipments')
@ApiAccountErrors()
export class ShipmentsController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  @ApiOperation({ summary: 'List shipments, oldest first, with cursor paging; filters combine with AND' })
  @ApiOkResponse({ type: ShipmentPageDto, description: 'The shipments under `items`, next to `metadata`.' })
  @ApiBadRequestResponse({
    type: ErrorEnvelopeDto,
    description:
      'InvalidParameter: limit or includeTotal (InvalidFormat, OutOfRange), cursor (InvalidCursor, also for a cursor of ' +
      'other filters), status (InvalidFormat), reference or tag (OutOfRange), arrivingBefore, arrivingAfter or late ' +
      '(InvalidFormat), any other parameter (UnknownField); ' +
      'accountId: AccountNotFound.',
  })
  async list(
    @Scope() scope: AccountScope,
    @Query() query: ListShipmentsQuery,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<JsonBytes<ItemPage<Shipment>>> {
    const page = query.pageRequest();
    const filters = query.filters();
    const json = await this.services.callJson(
      Subjects.oms.shipments.list,
      { ...scope, page, filters },
      request,
    );
    return jsonBody(reply, json);
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Create a shipment (status Planned)' })
  @ApiCreatedResponse({ type: ShipmentDto, description: 'Location and ETag headers name the new shipment.' })
  @ApiBadRequestResponse({ type: ErrorEnvelopeDto, description: INVALID_BODY })
  @ApiConflictResponse({ type: ErrorEnvelopeDto, description: 'DuplicateReference: another shipment of the account has this reference.' })
  async create(
    @Scope() scope: AccountScope,
    @Body() body: CreateShipmentDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Shipment> {
    const created = await this.services.call(
      Subjects.oms.shipments.create,
      { ...scope, shipment: body },
      request,
    );
    reply.header('Location', `/v1/accounts/${scope.accountId}/shipments/${created.resource.id}`);
    return withETag(reply, created);
  }

  @Get(':shipmentId')
  @ApiOperation({ summary: 'Get one shipment' })
  @ApiOkResponse({ type: ShipmentDto, description: 'The ETag header carries its version.' })
  @OneShipment()
  async get(
    @Scope() scope: AccountScope,
    @Param('shipmentId', ShipmentIdPipe) shipmentId: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Shipment> {
    const found = await this.services.call(
      Subjects.oms.shipments.get,
      { ...scope, shipmentId },
      request,
    );
    return withETag(reply, found);
  }

  @Patch(':shipmentId')
  @ApiOperation({ summary: 'Change some fields of a shipment; honours If-Match' })
  @ApiIfMatch()
  @ApiOkResponse({ type: ShipmentDto, description: 'The ETag header carries the new version; a patch that changes nothing keeps it.' })
  @ApiBadRequestResponse({ type: ErrorEnvelopeDto, description: INVALID_BODY })
  @OneShipment()
  @ApiConflictResponse({
    type: ErrorEnvelopeDto,
    description: 'ShipmentClosed: the shipment is Completed or Cancelled. DuplicateReference: another shipment of the account has this reference.',
  })
  async update(
    @TargetShipment() target: ShipmentTarget,
    @Body() body: UpdateShipmentDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Shipment> {
    const updated = await this.services.call(
      Subjects.oms.shipments.update,
      { ...target, patch: body },
      request,
    );
    return withETag(reply, updated);
  }

  @Delete(':shipmentId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a shipment with its sets and items; honours If-Match' })
  @ApiIfMatch()
  @ApiNoContentResponse({ description: 'Deleted.' })
  @OneShipment()
  @ApiConflictResponse({ type: ErrorEnvelopeDto, description: 'ShipmentClosed: the shipment is Completed or Cancelled and is kept as a record.' })
  async delete(@TargetShipment() target: ShipmentTarget, @Req() request: FastifyRequest): Promise<void> {
    await this.services.call(Subjects.oms.shipments.delete, target, request);
  }

  @Transition(ShipmentAction.Start, 'Start a Planned shipment: it becomes InTransit and departedAt is set')
  start(@TargetShipment() target: ShipmentTarget, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<void> {
    return this.transition(ShipmentAction.Start, target, request, reply);
  }

  @Transition(ShipmentAction.Deliver, 'Deliver an InTransit shipment: it becomes Delivered and deliveredAt is set')
  deliver(@TargetShipment() target: ShipmentTarget, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<void> {
    return this.transition(ShipmentAction.Deliver, target, request, reply);
  }

  @Transition(ShipmentAction.Complete, 'Complete a Delivered shipment: it becomes Completed (closed) and completedAt is set')
  complete(@TargetShipment() target: ShipmentTarget, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<void> {
    return this.transition(ShipmentAction.Complete, target, request, reply);
  }

  @Transition(ShipmentAction.Cancel, 'Cancel a Planned or InTransit shipment: it becomes Cancelled (closed) and cancelledAt is set')
  cancel(@TargetShipment() target: ShipmentTarget, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<void> {
    return this.transition(ShipmentAction.Cancel, target, request, reply);
  }

  private async transition(action: ShipmentAction, target: ShipmentTarget, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { version } = await this.services.call(
      Subjects.oms.shipments.transition,
      { ...target, action },
      request,
    );
    reply.header('ETag', etag(version));
  }
}
