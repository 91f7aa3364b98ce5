import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { type Conditional, ErrorCode, type ShipmentScope } from '@tracking/contracts';
import type { FastifyRequest } from 'fastify';
import { accountScopeOf } from '../accounts/account-scope.decorator.js';
import { parseIfMatch } from '../http/etag.js';
import { ResourceIdPipe } from '../http/resource-id.pipe.js';

export const ShipmentIdPipe = new ResourceIdPipe(ErrorCode.ShipmentNotExists, 'Shipment');

/** What a write to one shipment carries to the OMS: its scope, id and `If-Match` version. */
export type ShipmentTarget = ShipmentScope & Conditional;

/**
 * The shipment a write acts on, from `/v1/accounts/{accountId}/shipments/{shipmentId}/...`: the
 * account scope, the shipment id (404 ShipmentNotExists when it is not a UUID) and `If-Match` as a
 * version (412 when it names none).
 */
export const TargetShipment = createParamDecorator((_data: unknown, context: ExecutionContext): ShipmentTarget => {
  const request = context.switchToHttp().getRequest<FastifyRequest<{ Params: { shipmentId: string } }>>();
  return {
    ...accountScopeOf(request),
    shipmentId: ShipmentIdPipe.transform(request.params.shipmentId),
    expectedVersion: parseIfMatch(request.headers['if-match']),
  };
});
