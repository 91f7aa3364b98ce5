import { Injectable } from '@nestjs/common';
import { ErrorCode, type ItemPage, type ListVisitsRequest, type Visit } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { ShipmentRepository } from '../shipments/shipment.repository.js';
import type { VisitEntity } from './visit.entity.js';
import { VisitRepository } from './visit.repository.js';

@Injectable()
export class VisitsService {
  constructor(
    private readonly visits: VisitRepository,
    private readonly shipments: ShipmentRepository,
  ) {}

  /** The shipment's visits in the order they were recorded (a visit found late comes after those found before it). */
  async list(request: ListVisitsRequest): Promise<ItemPage<Visit>> {
    if ((await this.shipments.findStatus(request)) === null) {
      throw new DomainError(ErrorCode.ShipmentNotExists, `Shipment ${request.shipmentId} does not exist in this account.`);
    }
    const { rows, metadata } = await this.visits.findPage(request, request.page);
    return { items: rows.map(toVisit), metadata };
  }
}

export function toVisit(entity: VisitEntity): Visit {
  return { poiId: entity.poiId, arrivedAt: entity.arrivedAt.toISOString(), departedAt: entity.departedAt && entity.departedAt.toISOString() };
}
