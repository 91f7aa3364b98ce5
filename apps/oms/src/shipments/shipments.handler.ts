import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  type CreateShipmentRequest,
  type GetShipmentRequest,
  type ListShipmentsRequest,
  type ShipmentPage,
  Subjects,
  type UpdateShipmentRequest,
  type VersionedShipment,
} from '@tracking/contracts';
import { ShipmentsService } from './shipments.service.js';

@Controller()
export class ShipmentsHandler {
  constructor(private readonly shipments: ShipmentsService) {}

  @MessagePattern(Subjects.oms.shipments.list)
  list(@Payload() request: ListShipmentsRequest): Promise<ShipmentPage> {
    return this.shipments.list(request);
  }

  @MessagePattern(Subjects.oms.shipments.create)
  create(@Payload() request: CreateShipmentRequest): Promise<VersionedShipment> {
    return this.shipments.create(request);
  }

  @MessagePattern(Subjects.oms.shipments.get)
  get(@Payload() request: GetShipmentRequest): Promise<VersionedShipment> {
    return this.shipments.get(request);
  }

  @MessagePattern(Subjects.oms.shipments.update)
  update(@Payload() request: UpdateShipmentRequest): Promise<VersionedShipment> {
    return this.shipments.update(request);
  }
}
