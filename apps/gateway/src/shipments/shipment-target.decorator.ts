import { ErrorCode } from '@tracking/contracts';
import { resourceTarget, type ResourceTarget } from '../accounts/resource-target.decorator.js';
import { ResourceIdPipe } from '../http/resource-id.pipe.js';

export const ShipmentIdPipe = new ResourceIdPipe(ErrorCode.ShipmentNotExists, 'Shipment');

/** What a write to one shipment carries to the OMS: its scope, id and `If-Match` version. */
export type ShipmentTarget = ResourceTarget<'shipmentId'>;

/**
 * The shipment a write acts on, from `/v1/accounts/{accountId}/shipments/{shipmentId}/...`: the
 * account scope, the shipment id (404 ShipmentNotExists when it is not a UUID) and `If-Match` as a
 * version (412 when it names none).
 */
export const TargetShipment = resourceTarget('shipmentId', ShipmentIdPipe);
