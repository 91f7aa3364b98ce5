import { Injectable } from '@nestjs/common';
import {
  type CreatePointOfInterestRequest,
  DEFAULT_DWELL_SECONDS,
  DEFAULT_RADIUS_METERS,
  type DeletePointOfInterestRequest,
  ErrorCode,
  EventType,
  type ItemPage,
  type ListPointsOfInterestRequest,
  type PointOfInterest,
  type PointOfInterestRequest,
  type UpdatePointOfInterestRequest,
  type Versioned,
} from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { applyChanges, checkVersion } from '@tracking/database';
import { v7 as uuidv7 } from 'uuid';
import type { PointOfInterestEntity } from './point-of-interest.entity.js';
import { ShipmentRepository } from '../shipments/shipment.repository.js';
import { recordShipmentEvent } from '../shipments/shipment-events.js';
import { PointOfInterestRepository } from './point-of-interest.repository.js';

@Injectable()
export class PointsOfInterestService {
  constructor(
    private readonly pointsOfInterest: PointOfInterestRepository,
    private readonly shipments: ShipmentRepository,
  ) {}

  async list(request: ListPointsOfInterestRequest): Promise<ItemPage<PointOfInterest>> {
    const { rows, metadata } = await this.pointsOfInterest.findPage(request, request.page);
    return { items: rows.map(toPointOfInterest), metadata };
  }

  async create(request: CreatePointOfInterestRequest): Promise<Versioned<PointOfInterest>> {
    const input = request.pointOfInterest;
    const now = new Date();
    const entity: Omit<PointOfInterestEntity, 'seq'> = {
      id: uuidv7(),
      tenantId: request.tenantId,
      accountId: request.accountId,
      name: input.name,
      kind: input.kind,
      lat: input.location.lat,
      lng: input.location.lng,
      radiusMeters: input.radiusMeters ?? DEFAULT_RADIUS_METERS,
      dwellSeconds: input.dwellSeconds ?? DEFAULT_DWELL_SECONDS,
      address: input.address ?? null,
      metadata: input.metadata ?? {},
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
    await this.pointsOfInterest.insert(entity);
    return { resource: toPointOfInterest(entity), version: entity.version };
  }

  async get(request: PointOfInterestRequest): Promise<Versioned<PointOfInterest>> {
    const entity = await this.pointsOfInterest.findOne(request, request.pointOfInterestId);
    if (!entity) throw notFound(request.pointOfInterestId);
    return { resource: toPointOfInterest(entity), version: entity.version };
  }

  update(request: UpdatePointOfInterestRequest): Promise<Versioned<PointOfInterest>> {
    const id = request.pointOfInterestId;
    return this.pointsOfInterest.withLockedPointOfInterest(request, id, async (entity, manager) => {
      if (!entity) throw notFound(id);
      checkVersion('point of interest', entity, request.expectedVersion);
      const { patch } = request;
      const changed: Partial<PointOfInterestEntity> = {};
      if (patch.name !== undefined) changed.name = patch.name;
      if (patch.kind !== undefined) changed.kind = patch.kind;
      if (patch.location !== undefined) {
        changed.lat = patch.location.lat;
        changed.lng = patch.location.lng;
      }
      if (patch.radiusMeters !== undefined) changed.radiusMeters = patch.radiusMeters;
      if (patch.dwellSeconds !== undefined) changed.dwellSeconds = patch.dwellSeconds;
      if (patch.address !== undefined) changed.address = patch.address;
      // Metadata is replaced as a whole, like every other field; `{}` clears it.
      if (patch.metadata !== undefined) changed.metadata = patch.metadata;
      if (applyChanges(entity, changed)) await this.pointsOfInterest.save(manager, entity);
      return { resource: toPointOfInterest(entity), version: entity.version };
    });
  }

  delete(request: DeletePointOfInterestRequest): Promise<void> {
    const id = request.pointOfInterestId;
    return this.pointsOfInterest.withLockedPointOfInterest(request, id, async (entity, manager) => {
      if (!entity) throw notFound(id);
      checkVersion('point of interest', entity, request.expectedVersion);
      if (await this.shipments.usesPointOfInterest(manager, entity.id)) {
        throw new DomainError(
          ErrorCode.PointOfInterestInUse,
          'The point of interest is the origin or destination of an ongoing shipment; change or close that shipment first.',
        );
      }
      const cleared = await this.shipments.clearPointOfInterest(manager, entity.id);
      await recordShipmentEvent(manager, EventType.ShipmentUpdated, ...cleared);
      await this.pointsOfInterest.delete(manager, entity);
    });
  }
}

function notFound(id: string): DomainError {
  return new DomainError(ErrorCode.PointOfInterestNotExists, `Point of interest ${id} does not exist in this account.`);
}

export function toPointOfInterest(entity: Omit<PointOfInterestEntity, 'seq'>): PointOfInterest {
  return {
    id: entity.id,
    name: entity.name,
    kind: entity.kind,
    location: { lat: entity.lat, lng: entity.lng },
    radiusMeters: entity.radiusMeters,
    dwellSeconds: entity.dwellSeconds,
    address: entity.address,
    metadata: entity.metadata,
    createdAt: entity.createdAt.toISOString(),
    updatedAt: entity.updatedAt.toISOString(),
  };
}
