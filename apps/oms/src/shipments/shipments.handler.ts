import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
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
import { JsonReply } from '@tracking/messaging';
import { ShipmentsService } from './shipments.service.js';

@Controller()
export class ShipmentsHandler {
  constructor(private readonly shipments: ShipmentsService) {}

  @MessagePattern(Subjects.oms.shipments.list)
  list(@Payload() request: ListShipmentsRequest): Promise<JsonReply<ItemPage<Shipment>>> {
    return this.shipments.list(request);
  }

  @MessagePattern(Subjects.oms.shipments.create)
  create(@Payload() request: CreateShipmentRequest): Promise<Versioned<Shipment>> {
    return this.shipments.create(request);
  }

  @MessagePattern(Subjects.oms.shipments.get)
  get(@Payload() request: ShipmentRequest): Promise<JsonReply<Versioned<Shipment>>> {
    return this.shipments.get(request);
  }

  @MessagePattern(Subjects.oms.shipments.update)
  update(@Payload() request: UpdateShipmentRequest): Promise<Versioned<Shipment>> {
    return this.shipments.update(request);
  }

  @MessagePattern(Subjects.oms.shipments.delete)
  async delete(@Payload() request: DeleteShipmentRequest): Promise<null> {
    await this.shipments.delete(request);
    // Not `undefined`: Nest's packet would then carry no `response`, which the gateway treats as 502.
    return null;
  }

  @MessagePattern(Subjects.oms.shipments.transition)
  transition(@Payload() request: TransitionShipmentRequest): Promise<TransitionShipmentResult> {
    return this.shipments.transition(request);
  }
}
