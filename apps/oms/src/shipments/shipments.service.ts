import { Injectable } from '@nestjs/common';
import {
  type CreateShipmentRequest,
  ErrorCode,
  type GetShipmentRequest,
  type ListShipmentsRequest,
  type Shipment,
  type ShipmentPage,
  ShipmentStatus,
  type TransportMode,
  type UpdateShipmentRequest,
  type VersionedShipment,
} from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { v7 as uuidv7 } from 'uuid';
import type { ShipmentEntity } from './shipment.entity.js';
import { ShipmentRepository } from './shipment.repository.js';

const CLOSED: ReadonlySet<ShipmentStatus> = new Set([ShipmentStatus.Completed, ShipmentStatus.Cancelled]);

@Injectable()
export class ShipmentsService {
  constructor(private readonly shipments: ShipmentRepository) {}

  async list(request: ListShipmentsRequest): Promise<ShipmentPage> {
    const { rows, metadata } = await this.shipments.findPage(request, request.page);
    return { items: rows.map(toShipment), metadata };
  }

  async create(request: CreateShipmentRequest): Promise<VersionedShipment> {
    const now = new Date();
    const entity: Omit<ShipmentEntity, 'seq'> = {
      id: uuidv7(),
      tenantId: request.tenantId,
      accountId: request.accountId,
      name: request.shipment.name,
      reference: null,
      status: ShipmentStatus.Planned,
      mode: null,
      carrier: null,
      originId: null,
      destinationId: null,
      plannedDepartureAt: null,
      plannedArrivalAt: null,
      departedAt: null,
      deliveredAt: null,
      completedAt: null,
      cancelledAt: null,
      tags: [],
      metadata: {},
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
    await this.shipments.insert(entity);
    return { shipment: toShipment(entity), version: entity.version };
  }

  async get(request: GetShipmentRequest): Promise<VersionedShipment> {
    const shipment = await this.shipments.findOne(request, request.shipmentId);
    if (!shipment) throw shipmentNotFound(request.shipmentId);
    return { shipment: toShipment(shipment), version: shipment.version };
  }

  update(request: UpdateShipmentRequest): Promise<VersionedShipment> {
    return this.shipments.withLockedShipment(request, request.shipmentId, async (shipment, manager) => {
      if (!shipment) throw shipmentNotFound(request.shipmentId);
      if (request.expectedVersion !== undefined && request.expectedVersion !== shipment.version) {
        throw new DomainError(
          ErrorCode.PreconditionFailed,
          'The shipment has changed since you read it; fetch it again and retry with its current ETag.',
        );
      }
      if (CLOSED.has(shipment.status)) {
        throw new DomainError(ErrorCode.ShipmentClosed, `The shipment is ${shipment.status} and can no longer be changed.`);
      }
      if (request.patch.name !== undefined) shipment.name = request.patch.name;
      shipment.version += 1;
      shipment.updatedAt = new Date();
      await this.shipments.save(manager, shipment);
      return { shipment: toShipment(shipment), version: shipment.version };
    });
  }
}

function shipmentNotFound(id: string): DomainError {
  return new DomainError(ErrorCode.ShipmentNotExists, `Shipment ${id} does not exist in this account.`);
}

function iso(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}

export function toShipment(entity: Omit<ShipmentEntity, 'seq'>): Shipment {
  return {
    id: entity.id,
    name: entity.name,
    reference: entity.reference,
    status: entity.status,
    mode: entity.mode as TransportMode | null,
    carrier: entity.carrier,
    originId: entity.originId,
    destinationId: entity.destinationId,
    plannedDepartureAt: iso(entity.plannedDepartureAt),
    plannedArrivalAt: iso(entity.plannedArrivalAt),
    departedAt: iso(entity.departedAt),
    deliveredAt: iso(entity.deliveredAt),
    completedAt: iso(entity.completedAt),
    cancelledAt: iso(entity.cancelledAt),
    tags: entity.tags,
    metadata: entity.metadata,
    createdAt: entity.createdAt.toISOString(),
    updatedAt: entity.updatedAt.toISOString(),
  };
}
