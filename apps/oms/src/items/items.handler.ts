import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
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
import { ItemsService } from './items.service.js';

@Controller()
export class ItemsHandler {
  constructor(private readonly items: ItemsService) {}

  @MessagePattern(Subjects.oms.items.list)
  list(@Payload() request: ListItemsRequest): Promise<ItemPage<Item>> {
    return this.items.list(request);
  }

  @MessagePattern(Subjects.oms.items.create)
  create(@Payload() request: CreateItemRequest): Promise<Versioned<Item>> {
    return this.items.create(request);
  }

  @MessagePattern(Subjects.oms.items.get)
  get(@Payload() request: ItemRequest): Promise<Versioned<Item>> {
    return this.items.get(request);
  }

  @MessagePattern(Subjects.oms.items.update)
  update(@Payload() request: UpdateItemRequest): Promise<Versioned<Item>> {
    return this.items.update(request);
  }

  @MessagePattern(Subjects.oms.items.delete)
  async delete(@Payload() request: DeleteItemRequest): Promise<null> {
    await this.items.delete(request);
    // Not `undefined`: Nest's packet would then carry no `response`, which the gateway treats as 502.
    return null;
  }
}
