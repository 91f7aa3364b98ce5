import { Injectable } from '@nestjs/common';
import {
  type Conditional,
  type CreateItemRequest,
  type DeleteItemRequest,
  ErrorCode,
  type Item,
  type ItemPage,
  type ItemRequest,
  type ListItemsRequest,
  type UpdateItemRequest,
  type Versioned,
} from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { v7 as uuidv7 } from 'uuid';
import { applyChanges, checkVersion } from '@tracking/database';
import { ShipmentContentsService, type ShipmentWrite } from '../sets/shipment-contents.service.js';
import type { ItemEntity } from './item.entity.js';
import { ItemRepository } from './item.repository.js';

@Injectable()
export class ItemsService {
  constructor(
    private readonly items: ItemRepository,
    private readonly contents: ShipmentContentsService,
  ) {}

  async list(request: ListItemsRequest): Promise<ItemPage<Item>> {
    const set = await this.contents.requireSet(request);
    const { rows, metadata } = await this.items.findPage(set, request.page);
    return { items: rows.map((row) => toItem(row, set.shipmentId)), metadata };
  }

  create(request: CreateItemRequest): Promise<Versioned<Item>> {
    return this.contents.write(request, async (shipment) => {
      // FOR KEY SHARE: the set cannot be deleted before the item is in, but may be renamed.
      const set = await shipment.requireSet(request.setId, 'for_key_share');
      shipment.assertOpen();
      const input = request.item;
      const now = new Date();
      const entity: Omit<ItemEntity, 'seq'> = {
        id: uuidv7(),
        setId: set.id,
        sku: input.sku,
        description: input.description ?? null,
        quantity: input.quantity,
        unit: input.unit ?? null,
        metadata: input.metadata ?? {},
        version: 1,
        createdAt: now,
        updatedAt: now,
      };
      await this.items.insert(shipment.manager, entity);
      return versioned(entity, set.shipmentId);
    });
  }

  async get(request: ItemRequest): Promise<Versioned<Item>> {
    const set = await this.contents.requireSet(request);
    return versioned(itemOrNotFound(await this.items.findOne(set.id, request.itemId), request.itemId), set.shipmentId);
  }

  update(request: UpdateItemRequest): Promise<Versioned<Item>> {
    return this.contents.write(request, async (shipment) => {
      const item = await this.lockItem(shipment, request);
      const { patch } = request;
      const changed: Partial<ItemEntity> = {};
      if (patch.sku !== undefined) changed.sku = patch.sku;
      if (patch.description !== undefined) changed.description = patch.description;
      if (patch.quantity !== undefined) changed.quantity = patch.quantity;
      if (patch.unit !== undefined) changed.unit = patch.unit;
      // Metadata is replaced as a whole, like every other field; `{}` clears it.
      if (patch.metadata !== undefined) changed.metadata = patch.metadata;
      if (applyChanges(item, changed)) await this.items.save(shipment.manager, item);
      return versioned(item, shipment.shipmentId);
    });
  }

  delete(request: DeleteItemRequest): Promise<void> {
    return this.contents.write(request, async (shipment) => {
      await this.items.delete(shipment.manager, await this.lockItem(shipment, request));
    });
  }

  /** The item locked for a change, after the 404s in order, If-Match, and ShipmentClosed. */
  private async lockItem(shipment: ShipmentWrite, request: ItemRequest & Conditional): Promise<ItemEntity> {
    const set = await shipment.requireSet(request.setId, 'for_key_share');
    const item = itemOrNotFound(await this.items.findOne(set.id, request.itemId, shipment.manager, 'pessimistic_write'), request.itemId);
    checkVersion('item', item, request.expectedVersion);
    shipment.assertOpen();
    return item;
  }
}

function itemOrNotFound(item: ItemEntity | null, itemId: string): ItemEntity {
  if (!item) throw new DomainError(ErrorCode.ItemNotExists, `Item ${itemId} does not exist in this set.`);
  return item;
}

function versioned(entity: Omit<ItemEntity, 'seq'>, shipmentId: string): Versioned<Item> {
  return { resource: toItem(entity, shipmentId), version: entity.version };
}

export function toItem(entity: Omit<ItemEntity, 'seq'>, shipmentId: string): Item {
  return {
    id: entity.id,
    shipmentId,
    setId: entity.setId,
    sku: entity.sku,
    description: entity.description,
    quantity: entity.quantity,
    unit: entity.unit,
    metadata: entity.metadata,
    createdAt: entity.createdAt.toISOString(),
    updatedAt: entity.updatedAt.toISOString(),
  };
}
