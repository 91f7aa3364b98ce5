import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { ApiConflictResponse, ApiParam } from '@nestjs/swagger';
import type { ItemRequest, SetRequest, ShipmentScope } from '@tracking/contracts';
import type { FastifyRequest } from 'fastify';
import { accountScopeOf } from '../accounts/account-scope.decorator.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { NestedResourceIdPipe } from '../http/resource-id.pipe.js';
import { ShipmentIdPipe } from '../shipments/shipment-target.decorator.js';

/*
 * The path and the shared answers of every route below `/shipments/{shipmentId}/sets`, for the sets and
 * items controllers. A `shipmentId` that is not a UUID is 404 at once; a `setId` or `itemId` that is not
 * one goes on to the OMS, which answers the 404s in their order: shipment, then set, then item.
 */

type ContentsRequest = FastifyRequest<{ Params: { shipmentId: string; setId: string; itemId: string } }>;

const nestedId = new NestedResourceIdPipe();

function shipmentOf(request: ContentsRequest): ShipmentScope {
  return { ...accountScopeOf(request), shipmentId: ShipmentIdPipe.transform(request.params.shipmentId) };
}

function setOf(request: ContentsRequest): SetRequest {
  return { ...shipmentOf(request), setId: nestedId.transform(request.params.setId) };
}

const requestOf = (context: ExecutionContext) => context.switchToHttp().getRequest<ContentsRequest>();

/** The account scope and `shipmentId` of `/shipments/{shipmentId}/sets[...]`. */
export const ShipmentPath = createParamDecorator((_data: unknown, context: ExecutionContext) => shipmentOf(requestOf(context)));

/** The account scope, `shipmentId` and `setId` of `/shipments/{shipmentId}/sets/{setId}[...]`. */
export const SetPath = createParamDecorator((_data: unknown, context: ExecutionContext) => setOf(requestOf(context)));

/** The account scope, `shipmentId`, `setId` and `itemId` of `/shipments/{shipmentId}/sets/{setId}/items/{itemId}`. */
export const ItemPath = createParamDecorator((_data: unknown, context: ExecutionContext): ItemRequest => {
  const request = requestOf(context);
  return { ...setOf(request), itemId: nestedId.transform(request.params.itemId) };
});

export const ApiShipmentParam = () => ApiParam({ name: 'shipmentId', format: 'uuid', description: 'A shipment of the account.' });
export const ApiSetParam = () => ApiParam({ name: 'setId', format: 'uuid', description: 'A set of the shipment.' });
export const ApiItemParam = () => ApiParam({ name: 'itemId', format: 'uuid', description: 'An item of the set.' });

export const SHIPMENT_NOT_FOUND = "ShipmentNotExists: unknown id, not a UUID, or another account's shipment.";
export const SET_NOT_FOUND = `${SHIPMENT_NOT_FOUND} Then SetNotExists: unknown id, not a UUID, or a set of another shipment.`;
export const ITEM_NOT_FOUND = `${SET_NOT_FOUND} Then ItemNotExists: unknown id, not a UUID, or an item of another set.`;

/** The 409 of every write below a shipment. */
export const ApiShipmentClosed = () =>
  ApiConflictResponse({
    type: ErrorEnvelopeDto,
    description: 'ShipmentClosed: the shipment is Completed or Cancelled; its sets and items can no longer change.',
  });
