import { Injectable } from '@nestjs/common';
import { CLOSED_SHIPMENT_STATUSES, ErrorCode, type SetRequest, type ShipmentScope, type ShipmentStatus } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { EntityManager } from 'typeorm';
import type { SetEntity } from './set.entity.js';
import { ShipmentRepository } from '../shipments/shipment.repository.js';
import { type RowLock, SetRepository } from './set.repository.js';

/**
 * The checks that every call below `/shipments/{shipmentId}/sets` makes first, in the order of docs/api.md:
 * the shipment (ShipmentNotExists), then the set (SetNotExists); writes also refuse a closed shipment.
 * Used by sets and by items, so both answer alike.
 */
@Injectable()
export class ShipmentContentsService {
  constructor(
    private readonly shipments: ShipmentRepository,
    private readonly sets: SetRepository,
  ) {}

  /** For reads: ShipmentNotExists unless the account has the shipment. */
  async requireShipment(scope: ShipmentScope): Promise<void> {
    if ((await this.shipments.findStatus(scope)) === null) throw shipmentNotFound(scope.shipmentId);
  }

  /** For reads: the shipment's set, else ShipmentNotExists or SetNotExists. */
  async requireSet(request: SetRequest): Promise<SetEntity> {
    await this.requireShipment(request);
    return setOrNotFound(await this.sets.findOne(request.shipmentId, request.setId), request.setId);
  }

  /**
   * For writes: runs `work` in one transaction with the shipment locked against lifecycle transitions
   * (see `ShipmentRepository.withLockedForContents`), once it is known to be the account's. `work` makes
   * its own 404 and 412 checks, then calls `assertOpen()`, so a closed shipment cannot hide a 404.
   */
  write<T>(scope: ShipmentScope, work: (shipment: ShipmentWrite) => Promise<T>): Promise<T> {
    return this.shipments.withLockedForContents(scope, (status, manager) => {
      if (status === null) throw shipmentNotFound(scope.shipmentId);
      return work(new ShipmentWrite(this.sets, scope.shipmentId, status, manager));
    });
  }
}

/** A write below one shipment, which stays locked for share until the transaction of `manager` ends. */
export class ShipmentWrite {
  constructor(
    private readonly sets: SetRepository,
    readonly shipmentId: string,
    private readonly status: ShipmentStatus,
    readonly manager: EntityManager,
  ) {}

  /** The shipment's set, locked with `lock` until the transaction ends; else SetNotExists. */
  async requireSet(setId: string, lock: RowLock): Promise<SetEntity> {
    return setOrNotFound(await this.sets.findOne(this.shipmentId, setId, this.manager, lock), setId);
  }

  /** ShipmentClosed when the shipment is Completed or Cancelled. */
  assertOpen(): void {
    if (CLOSED_SHIPMENT_STATUSES.includes(this.status)) throw shipmentClosed(this.status);
  }
}

/** The refusal of a write below a Completed or Cancelled shipment. */
export function shipmentClosed(status: ShipmentStatus): DomainError {
  return new DomainError(ErrorCode.ShipmentClosed, `The shipment is ${status}; its sets and items can no longer be changed.`);
}

function setOrNotFound(set: SetEntity | null, setId: string): SetEntity {
  if (!set) throw new DomainError(ErrorCode.SetNotExists, `Set ${setId} does not exist in this shipment.`);
  return set;
}

function shipmentNotFound(shipmentId: string): DomainError {
  return new DomainError(ErrorCode.ShipmentNotExists, `Shipment ${shipmentId} does not exist in this account.`);
}
