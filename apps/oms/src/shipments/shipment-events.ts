import { EtaBasis, EventType, type Shipment, type ShipmentEta, ShipmentStatus } from '@tracking/contracts';
import { toDateTime } from '@tracking/core';
import { recordEvents } from '@tracking/outbox';
import type { EntityManager } from 'typeorm';
import type { ShipmentEntity } from './shipment.entity.js';

// A shipment as the API and its events show it, and the recording of its events: imported by the
// shipments' service and by the evaluation's store without either importing the other.

/**
 * A shipment as the API shows it. The trigger function `shipments_api_json()` (migration
 * StoreShipmentJson) writes the same JSON in PL/pgSQL for the hot reads: a change here needs a migration there.
 */
export function toShipment(entity: Omit<ShipmentEntity, 'seq'>): Shipment {
  return {
    id: entity.id,
    name: entity.name,
    reference: entity.reference,
    status: entity.status,
    mode: entity.mode,
    carrier: entity.carrier,
    originId: entity.originId,
    destinationId: entity.destinationId,
    plannedDepartureAt: toDateTime(entity.plannedDepartureAt),
    plannedArrivalAt: toDateTime(entity.plannedArrivalAt),
    departedAt: toDateTime(entity.departedAt),
    deliveredAt: toDateTime(entity.deliveredAt),
    completedAt: toDateTime(entity.completedAt),
    cancelledAt: toDateTime(entity.cancelledAt),
    tags: entity.tags,
    metadata: entity.metadata,
    createdAt: entity.createdAt.toISOString(),
    updatedAt: entity.updatedAt.toISOString(),
    autoTransitions: entity.autoTransitions,
    conditions: entity.conditions,
    excursions: { temperatureSeconds: entity.excursionTemperatureMs / 1000, humiditySeconds: entity.excursionHumidityMs / 1000 },
    lastPosition:
      entity.lastPositionRecordedAt && entity.lastPositionDeviceId && entity.lastPositionLat != null && entity.lastPositionLng != null
        ? {
            lat: entity.lastPositionLat,
            lng: entity.lastPositionLng,
            accuracyMeters: entity.lastPositionAccuracyMeters ?? null,
            recordedAt: entity.lastPositionRecordedAt.toISOString(),
            deviceId: entity.lastPositionDeviceId,
          }
        : null,
    eta: etaOf(entity),
  };
}

/**
 * The shipment's `eta` (docs/eta.md), as the trigger function writes it: none without a destination or
 * from Delivered on; the evaluation's estimate while it is for the current destination; else the plan.
 */
export function etaOf(entity: Omit<ShipmentEntity, 'seq'>): ShipmentEta | null {
  if ((entity.status !== ShipmentStatus.Planned && entity.status !== ShipmentStatus.InTransit) || entity.destinationId === null) return null;
  if (entity.etaArrivalAt && entity.etaEarliestAt && entity.etaLatestAt && entity.etaBasis && entity.etaCalculatedAt && entity.etaDestinationId === entity.destinationId) {
    return {
      arrivalAt: entity.etaArrivalAt.toISOString(),
      earliestAt: entity.etaEarliestAt.toISOString(),
      latestAt: entity.etaLatestAt.toISOString(),
      remainingMeters: entity.etaRemainingMeters ?? null,
      basis: entity.etaBasis,
      asOf: toDateTime(entity.etaAsOf ?? null),
      calculatedAt: entity.etaCalculatedAt.toISOString(),
    };
  }
  if (entity.plannedArrivalAt === null) return null;
  const planned = entity.plannedArrivalAt.toISOString();
  return { arrivalAt: planned, earliestAt: planned, latestAt: planned, remainingMeters: null, basis: EtaBasis.Planned, asOf: null, calculatedAt: entity.updatedAt.toISOString() };
}

/** The event of the transition to `status`: started, delivered, completed or cancelled. */
export function transitionEvent(status: ShipmentStatus): EventType {
  switch (status) {
    case ShipmentStatus.InTransit:
      return EventType.ShipmentStarted;
    case ShipmentStatus.Delivered:
      return EventType.ShipmentDelivered;
    case ShipmentStatus.Completed:
      return EventType.ShipmentCompleted;
    case ShipmentStatus.Cancelled:
      return EventType.ShipmentCancelled;
    case ShipmentStatus.Planned:
      throw new Error('no transition leads to Planned');
  }
}

/**
 * Records the shipments' events in the transaction of `manager` (the transactional outbox, docs/events.md),
 * one statement for all: published if and only if the change commits. `data` is each shipment as GET
 * shows it after the change (for `shipment.deleted`, its last state).
 */
export function recordShipmentEvent(manager: EntityManager, type: EventType, ...shipments: Omit<ShipmentEntity, 'seq'>[]): Promise<unknown> {
  return recordEvents(
    manager,
    shipments.map((shipment) => ({ tenantId: shipment.tenantId, accountId: shipment.accountId, type, data: toShipment(shipment) })),
  );
}
