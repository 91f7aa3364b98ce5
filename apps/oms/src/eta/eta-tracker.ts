import { Injectable } from '@nestjs/common';
import { EventType, type EtaChangedData, ShipmentStatus } from '@tracking/contracts';
import { estimateArrival, etaMovedEnough, type GeofenceState, laneTripOf, type LaneStats, type PlaceIndex } from '@tracking/geofence';
import { entryBound } from '@tracking/core';
import { LRUCache } from 'lru-cache';
import type { EntityManager } from 'typeorm';
import type { ShipmentEntity } from '../shipments/shipment.entity.js';
import { etaOf } from '../shipments/shipment-events.js';
import type { ShipmentOutcomes } from '../evaluation/evaluation-store.js';
import { EtaRepository, type LaneKey } from './eta.repository.js';

/**
 * Lanes' statistics kept in memory this long: they change only when a trip of the lane is delivered, and
 * reading them for every evaluated shipment would add a round trip to each (measured: bench/eta.mjs). A
 * trip delivered through another process shows here within this time; the estimate is a few seconds of
 * lane history late, never wrong about the shipment's own track.
 */
const LANE_CACHE_TTL_MS = 60_000;
const LANE_CACHE_MAX = 10_000;

/**
 * The estimated arrival of the shipments the evaluation evaluates (docs/eta.md): after a shipment's batch
 * is evaluated, in the same transaction, `update` estimates its arrival from the track the engine folded
 * (in event time), its lane's history and its plan, hands it to the chunk's writes (stored with the other
 * shipments' of the chunk in one statement at its end), with the `shipment.eta_changed` it publishes when it
 * moved enough (recorded in that same statement), and, once it is delivered, adds its trip to its lane's
 * statistics.
 */
@Injectable()
export class EtaTracker {
  private readonly lanes = new LRUCache<string, { stats: LaneStats | null }>({ ...entryBound(LANE_CACHE_MAX), ttl: LANE_CACHE_TTL_MS });

  constructor(private readonly repository: EtaRepository) {}

  async update(outcomes: ShipmentOutcomes, shipment: ShipmentEntity, state: GeofenceState, places: PlaceIndex): Promise<void> {
    const { manager } = outcomes;
    const destination = shipment.destinationId === null ? undefined : places.get(shipment.destinationId);
    if (destination === undefined || state.track === undefined) return;
    const origin = shipment.originId === null ? undefined : places.get(shipment.originId);
    const key: LaneKey | null = origin && shipment.originId && shipment.destinationId
      ? { tenantId: shipment.tenantId, accountId: shipment.accountId, originId: shipment.originId, destinationId: shipment.destinationId }
      : null;
    if (shipment.status === ShipmentStatus.Delivered) {
      if (key === null || origin === undefined || !shipment.departedAt || !shipment.deliveredAt) return;
      const trip = laneTripOf(state.track, origin, destination, shipment.departedAt.getTime(), shipment.deliveredAt.getTime());
      if (trip && (await this.repository.addTrip(manager, key, shipment.id, trip, shipment.departedAt, shipment.deliveredAt))) this.lanes.delete(laneId(key));
      return;
    }
    if (shipment.status !== ShipmentStatus.Planned && shipment.status !== ShipmentStatus.InTransit) return;
    // Nothing new since the stored estimate (a timer's evaluation with no reading): it stands.
    const current = shipment.etaDestinationId === shipment.destinationId && shipment.etaArrivalAt != null;
    if (current && shipment.etaAsOf?.getTime() === state.track.t) return;
    const lane = key === null ? null : await this.laneOf(manager, key);
    const estimate = estimateArrival({
      destination,
      origin: origin ?? null,
      plannedArrivalAt: shipment.plannedArrivalAt?.getTime() ?? null,
      track: state.track,
      lane,
    });
    // The plan is what the shipment shows already (the trigger derives it): nothing to store.
    if (estimate === null || estimate.basis === 'Planned') return;
    // What the shipment started with counts as published: its plan (or null) until an estimate is published.
    const published = current ? (shipment.etaPublishedArrivalAt ?? null) : (shipment.plannedArrivalAt ?? null);
    const publish = etaMovedEnough(published?.getTime() ?? null, estimate);
    const calculatedAt = new Date();
    const publishedArrivalAt = publish ? new Date(estimate.arrivalAt) : published;
    Object.assign(shipment, {
      etaArrivalAt: new Date(estimate.arrivalAt),
      etaEarliestAt: new Date(estimate.earliestAt),
      etaLatestAt: new Date(estimate.latestAt),
      etaRemainingMeters: estimate.remainingMeters,
      etaBasis: estimate.basis,
      etaAsOf: estimate.asOf === null ? null : new Date(estimate.asOf),
      etaCalculatedAt: calculatedAt,
      etaDestinationId: destination.id,
      etaPublishedArrivalAt: publishedArrivalAt,
    });
    const eta = publish ? etaOf(shipment) : null;
    const data: EtaChangedData | null = eta && { shipmentId: shipment.id, eta, previousArrivalAt: published?.toISOString() ?? null };
    // Recorded with the chunk's estimates, in their statement (`ShipmentRepository.saveEstimates`).
    const event = data ? { tenantId: shipment.tenantId, accountId: shipment.accountId, type: EventType.ShipmentEtaChanged, data } : undefined;
    outcomes.saveEstimate({ destinationId: destination.id, estimate, calculatedAt, publishedArrivalAt, event });
  }

  private async laneOf(manager: EntityManager, key: LaneKey): Promise<LaneStats | null> {
    const id = laneId(key);
    const cached = this.lanes.get(id);
    if (cached) return cached.stats;
    const stats = await this.repository.lane(manager, key);
    this.lanes.set(id, { stats });
    return stats;
  }
}

function laneId(key: LaneKey): string {
  return `${key.tenantId}/${key.accountId}/${key.originId}/${key.destinationId}`;
}
