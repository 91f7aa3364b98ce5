import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type CreateItemRequest,
  type DeleteItemRequest,
  type Item,
  type ItemPage,
  type ItemRequest,
  type ListItemsRequest,
  Subjects,
  type UpdateItemRequest,
  type Versioned,
} from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { ItemsService } from './items.service.js';

@Controller()
export class ItemsHandler {
  constructor(private readonly items: ItemsService) {}

  @Handles(Subjects.oms.items.list)
  list(@Payload() request: ListItemsRequest): Promise<ItemPage<Item>> {
    return this.items.list(request);
  }

  @Handles(Subjects.oms.items.create)
  create(@Payload() request: CreateItemRequest): Promise<Versioned<Item>> {
    return this.items.create(request);
  }

  @Handles(Subjects.oms.items.get)
  get(@Payload() request: ItemRequest): Promise<Versioned<Item>> {
    return this.items.get(request);
  }

  @Handles(Subjects.oms.items.update)
  update(@Payload() request: UpdateItemRequest): Promise<Versioned<Item>> {
    return this.items.update(request);
  }

  @Handles(Subjects.oms.items.delete)
  async delete(@Payload() request: DeleteItemRequest): Promise<void> {
    await this.items.delete(request);
  }
}
