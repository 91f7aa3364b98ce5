import { Injectable } from '@nestjs/common';
import type {
  CreateSetRequest,
  DeleteSetRequest,
  ItemPage,
  ListSetsRequest,
  SetRequest,
  ShipmentSet,
  UpdateSetRequest,
  Versioned,
} from '@tracking/contracts';
import { v7 as uuidv7 } from 'uuid';
import { applyChanges, checkVersion } from '@tracking/database';
import { DmsClient } from '../dms/dms.client.js';
import type { SetEntity } from './set.entity.js';
import { SetRepository } from './set.repository.js';
import { ShipmentContentsService } from './shipment-contents.service.js';

@Injectable()
export class SetsService {
  constructor(
    private readonly sets: SetRepository,
    private readonly contents: ShipmentContentsService,
    private readonly dms: DmsClient,
  ) {}

  async list(request: ListSetsRequest): Promise<ItemPage<ShipmentSet>> {
    await this.contents.requireShipment(request);
    const { rows, metadata } = await this.sets.findPage(request.shipmentId, request.page);
    return { items: rows.map(toSet), metadata };
  }

  create(request: CreateSetRequest): Promise<Versioned<ShipmentSet>> {
    return this.contents.write(request, async (shipment) => {
      shipment.assertOpen();
      const now = new Date();
      const entity: Omit<SetEntity, 'seq'> = {
        id: uuidv7(),
        shipmentId: request.shipmentId,
        name: request.set.name,
        kind: request.set.kind,
        version: 1,
        createdAt: now,
        updatedAt: now,
      };
      await this.sets.insert(shipment.manager, entity);
      return versioned(entity);
    });
  }

  async get(request: SetRequest): Promise<Versioned<ShipmentSet>> {
    return versioned(await this.contents.requireSet(request));
  }

  update(request: UpdateSetRequest): Promise<Versioned<ShipmentSet>> {
    return this.contents.write(request, async (shipment) => {
      // Not FOR UPDATE: writers of the set's items (FOR KEY SHARE) need not wait for a rename.
      const set = await shipment.requireSet(request.setId, 'for_no_key_update');
      checkVersion('set', set, request.expectedVersion);
      shipment.assertOpen();
      const { patch } = request;
      const changed: Partial<SetEntity> = {};
      if (patch.name !== undefined) changed.name = patch.name;
      if (patch.kind !== undefined) changed.kind = patch.kind;
      if (applyChanges(set, changed)) await this.sets.save(shipment.manager, set);
      return versioned(set);
    });
  }

  delete(request: DeleteSetRequest): Promise<void> {
    return this.contents.write(request, async (shipment) => {
      const set = await shipment.requireSet(request.setId, 'pessimistic_write');
      checkVersion('set', set, request.expectedVersion);
      shipment.assertOpen();
      await this.sets.delete(shipment.manager, set);
      // The set is locked FOR UPDATE, so no assignment to it can commit meanwhile. As for shipments
      // (ShipmentsService.releaseDevices): when the DMS fails, the deletion rolls back with its error.
      const { tenantId, accountId, shipmentId } = request;
      await this.dms.release({ tenantId, accountId, shipmentId, setId: set.id });
    });
  }
}

function versioned(entity: Omit<SetEntity, 'seq'>): Versioned<ShipmentSet> {
  return { resource: toSet(entity), version: entity.version };
}

export function toSet(entity: Omit<SetEntity, 'seq'>): ShipmentSet {
  return {
    id: entity.id,
    shipmentId: entity.shipmentId,
    name: entity.name,
    kind: entity.kind,
    // The DMS owns the device links; the gateway fills this from it (`dms.devices.linked`).
    deviceIds: [],
    createdAt: entity.createdAt.toISOString(),
    updatedAt: entity.updatedAt.toISOString(),
  };
}
