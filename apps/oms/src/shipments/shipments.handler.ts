import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type CreateShipmentRequest,
  type DeleteShipmentRequest,
  type ItemPage,
  type ListShipmentsRequest,
  type Shipment,
  type ShipmentRequest,
  Subjects,
  type TransitionShipmentRequest,
  type TransitionShipmentResult,
  type UpdateShipmentRequest,
  type Versioned,
} from '@tracking/contracts';
import { Handles, JsonReply } from '@tracking/messaging';
import { ShipmentsService } from './shipments.service.js';

@Controller()
export class ShipmentsHandler {
  constructor(private readonly shipments: ShipmentsService) {}

  @Handles(Subjects.oms.shipments.list)
  list(@Payload() request: ListShipmentsRequest): Promise<JsonReply<ItemPage<Shipment>>> {
    return this.shipments.list(request);
  }

  @Handles(Subjects.oms.shipments.create)
  create(@Payload() request: CreateShipmentRequest): Promise<Versioned<Shipment>> {
    return this.shipments.create(request);
  }

  @Handles(Subjects.oms.shipments.get)
  get(@Payload() request: ShipmentRequest): Promise<JsonReply<Versioned<Shipment>>> {
    return this.shipments.get(request);
  }

  @Handles(Subjects.oms.shipments.update)
  update(@Payload() request: UpdateShipmentRequest): Promise<Versioned<Shipment>> {
    return this.shipments.update(request);
  }

  @Handles(Subjects.oms.shipments.delete)
  async delete(@Payload() request: DeleteShipmentRequest): Promise<void> {
    await this.shipments.delete(request);
  }

  @Handles(Subjects.oms.shipments.transition)
  transition(@Payload() request: TransitionShipmentRequest): Promise<TransitionShipmentResult> {
    return this.shipments.transition(request);
  }
}
