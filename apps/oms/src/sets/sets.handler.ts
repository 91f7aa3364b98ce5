import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  type CreateSetRequest,
  type DeleteSetRequest,
  type ItemPage,
  type ListSetsRequest,
  type SetRequest,
  type ShipmentSet,
  Subjects,
  type UpdateSetRequest,
  type Versioned,
} from '@tracking/contracts';
import { SetsService } from './sets.service.js';

@Controller()
export class SetsHandler {
  constructor(private readonly sets: SetsService) {}

  @MessagePattern(Subjects.oms.sets.list)
  list(@Payload() request: ListSetsRequest): Promise<ItemPage<ShipmentSet>> {
    return this.sets.list(request);
  }

  @MessagePattern(Subjects.oms.sets.create)
  create(@Payload() request: CreateSetRequest): Promise<Versioned<ShipmentSet>> {
    return this.sets.create(request);
  }

  @MessagePattern(Subjects.oms.sets.get)
  get(@Payload() request: SetRequest): Promise<Versioned<ShipmentSet>> {
    return this.sets.get(request);
  }

  @MessagePattern(Subjects.oms.sets.update)
  update(@Payload() request: UpdateSetRequest): Promise<Versioned<ShipmentSet>> {
    return this.sets.update(request);
  }

  @MessagePattern(Subjects.oms.sets.delete)
  async delete(@Payload() request: DeleteSetRequest): Promise<null> {
    await this.sets.delete(request);
    // Not `undefined`: Nest's packet would then carry no `response`, which the gateway treats as 502.
    return null;
  }
}
