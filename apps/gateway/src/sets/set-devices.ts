import { type AccountScope, type ShipmentSet, Subjects } from '@tracking/contracts';
import type { FastifyRequest } from 'fastify';
import type { ServiceClient } from '../rpc/rpc.module.js';

/**
 * The sets with their `deviceIds` filled from the DMS, which owns the device links (the OMS keeps none).
 * One call for any number of sets; a set without devices gets `[]`.
 */
export async function withDeviceIds(
  services: ServiceClient,
  scope: AccountScope,
  sets: ShipmentSet[],
  request: FastifyRequest,
): Promise<ShipmentSet[]> {
  if (sets.length === 0) return sets;
  const { tenantId, accountId } = scope;
  const linked = await services.call(
    Subjects.dms.devices.linked,
    { tenantId, accountId, setIds: sets.map((set) => set.id) },
    request,
  );
  return sets.map((set) => ({ ...set, deviceIds: linked[set.id] ?? [] }));
}
