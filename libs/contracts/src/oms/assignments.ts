import type { SetRequest } from './sets.js';

/**
 * `PUT` or `DELETE /shipments/{shipmentId}/sets/{setId}/devices/{deviceId}`: the OMS checks the
 * shipment and the set under a shipment lock, then asks the DMS, which owns the link, to change it.
 * Both answer `null` (204).
 */
export interface AssignmentRequest extends SetRequest {
  deviceId: string;
}
