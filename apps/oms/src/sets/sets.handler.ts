import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
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
import { Handles } from '@tracking/messaging';
import { SetsService } from './sets.service.js';

@Controller()
export class SetsHandler {
  constructor(private readonly sets: SetsService) {}

  @Handles(Subjects.oms.sets.list)
  list(@Payload() request: ListSetsRequest): Promise<ItemPage<ShipmentSet>> {
    return this.sets.list(request);
  }

  @Handles(Subjects.oms.sets.create)
  create(@Payload() request: CreateSetRequest): Promise<Versioned<ShipmentSet>> {
    return this.sets.create(request);
  }

  @Handles(Subjects.oms.sets.get)
  get(@Payload() request: SetRequest): Promise<Versioned<ShipmentSet>> {
    return this.sets.get(request);
  }

  @Handles(Subjects.oms.sets.update)
  update(@Payload() request: UpdateSetRequest): Promise<Versioned<ShipmentSet>> {
    return this.sets.update(request);
  }

  @Handles(Subjects.oms.sets.delete)
  async delete(@Payload() request: DeleteSetRequest): Promise<void> {
    await this.sets.delete(request);
  }
}
