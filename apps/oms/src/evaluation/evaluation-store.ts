import { Injectable } from '@nestjs/common';
import {
  type AccountScope,
  type Alert,
  type AlertKind,
  CLOSED_SHIPMENT_STATUSES,
  EventType,
  ShipmentAction,
  type ShipmentScope,
  type ShipmentStatus,
  type VisitEventData,
} from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { GeofenceState } from '@tracking/geofence';
import { type Lease, recordEvents } from '@tracking/outbox';
import type { EntityManager } from 'typeorm';
import { v7 as uuidv7 } from 'uuid';
import { AlertLifecycle, type AlertOpened } from '../alerts/alert-lifecycle.js';
import { type ExcursionMeasure, ExcursionRepository } from '../alerts/excursion.repository.js';
import { VisitRepository } from '../alerts/visit.repository.js';
import type { ShipmentEntity } from '../shipments/shipment.entity.js';
import { transitionOf } from '../shipments/shipment-lifecycle.js';
import { type EstimateSave, ShipmentRepository } from '../shipments/shipment.repository.js';
import { recordShipmentEvent, transitionEvent } from '../shipments/shipment-events.js';
import { type EvaluationRecord, EvaluationRecordRepository, type StateSave } from './evaluation-record.repository.js';

/**
 * Where the evaluation of readings records what it decides about one shipment (docs/alerts-and-visits.md):
 * `forEvaluations` runs the evaluation's writes for a chunk of shipments in one transaction, with the shipments
 * locked against closing,
 * and every write is idempotent, so a decision replayed after a crash changes nothing and publishes nothing twice.
 */
@Injectable()
export class EvaluationStore {
  constructor(
    private readonly shipments: ShipmentRepository,
    private readonly alerts: AlertLifecycle,
    private readonly visits: VisitRepository,
    private readonly excursions: ExcursionRepository,
    private readonly records: EvaluationRecordRepository,
  ) {}

  /**
   * One transaction for the evaluations of several shipments (the evaluation works in chunks: one commit
   * for many shipments). The shipments are locked `FOR KEY SHARE` (a transition or delete waits, and is
   * waited for), then their evaluation records `FOR UPDATE`: the open shipments' in
   * id order, then the closed ones' in id order (the status cannot change under the shipment's lock, so
   * every evaluation takes them in this one order; a lifecycle transition takes the shipment first too).
   * Shipments gone are left out. `work` gets each open one's outcomes (with `outcomes.shipment`) and
   * record, and saves each new state with `outcomes.saveState`; the states are written together after it.
   * A closed shipment that still has a record comes once more, with `closing: true`, for its last
   * evaluation (what it retained becomes final); every closed shipment's record is deleted after `work`.
   * A throw rolls back the whole chunk.
   *
   * `lease` is the lease of the shipments' partition: checked first (the fence), so that a worker that
   * lost its partition commits nothing (`LeaseLost`), and a worker taking the partition over waits for
   * the transactions of the former holder in progress.
   */
  async forEvaluations<T>(
    scopes: readonly ShipmentScope[],
    lease: Lease,
    work: (evaluations: { outcomes: ShipmentOutcomes; record: EvaluationRecord; closing: boolean }[]) => Promise<T>,
  ): Promise<T> {
    return this.shipments.withEntitiesLockedForEvaluation(scopes, async (entities, manager) => {
      await lease.check(manager);
      const isClosed = (entity: ShipmentEntity) => CLOSED_SHIPMENT_STATUSES.includes(entity.status);
      const open = entities.filter((entity) => !isClosed(entity));
      const closed = entities.filter(isClosed);
      const records = await this.records.lock(manager, open);
      const closing = await this.records.lock(manager, closed, { create: false });
      const saves: StateSave[] = [];
      const estimates: EstimateSave[] = [];
      const evaluations = entities.flatMap((entity) => {
        const record = isClosed(entity) ? closing.get(entity.id) : records.get(entity.id);
        if (!record) {
          if (isClosed(entity)) return [];
          throw new Error(`no evaluation record of shipment ${entity.id}`);
        }
        const scope = { tenantId: entity.tenantId, accountId: entity.accountId, shipmentId: entity.id };
        const outcomes = new ShipmentOutcomes(manager, scope, entity.status, this.shipments, this.alerts, this.visits, this.excursions, entity, saves, estimates);
        return [{ outcomes, record, closing: isClosed(entity) }];
      });
      const result = await work(evaluations);
      await this.records.save(manager, saves);
      await this.shipments.saveEstimates(manager, estimates);
      if (closed.length > 0) await this.records.delete(manager, closed.map((entity) => entity.id));
      return result;
    });
  }
}

/** The writes of one shipment's evaluation, in the transaction of `EvaluationStore.forEvaluations`. */
export class ShipmentOutcomes {
  constructor(
    /** The chunk's transaction (the estimated arrival's lanes and events are written in it too: `EtaTracker`). */
    readonly manager: EntityManager,
    private readonly scope: ShipmentScope,
    /** The shipment's status, kept until the transaction ends. */
    readonly status: ShipmentStatus,
    private readonly shipments: ShipmentRepository,
    private readonly alerts: AlertLifecycle,
    private readonly visits: VisitRepository,
    private readonly excursions: ExcursionRepository,
    /** The shipment as read in this transaction; transitions made here update it. */
    readonly shipment: ShipmentEntity,
    /** The chunk's new states, written together after the chunk's work. */
    private readonly saves: StateSave[],
    /** The chunk's estimated arrivals (`EtaTracker`), written together after the chunk's work. */
    private readonly estimates: EstimateSave[],
  ) {}

  /** The shipment's new estimated arrival, written at the end of the transaction with the chunk's others. */
  saveEstimate(save: Omit<EstimateSave, 'shipmentId'>): void {
    this.estimates.push({ ...save, shipmentId: this.scope.shipmentId });
  }

  /**
   * The evaluation's new state, read at `version`, and when the timers must look at the shipment next
   * (null: never); written at the end of the transaction with the other shipments' of the chunk.
   */
  saveState(version: number, state: GeofenceState, dueAt: Date | null): void {
    this.saves.push({ shipmentId: this.scope.shipmentId, version, state, dueAt });
  }

  /**
   * `autoTransitions`: starts (departed from the origin) or delivers (arrived at the destination) the
   * shipment with the visit's event time as `departedAt` / `deliveredAt`, as the client's own call would (a
   * new version, `updatedAt`, `shipment.started` / `shipment.delivered`). Nothing when the shipment does not
   * ask for it or is in a status where the action is invalid. Returns whether it moved.
   */
  async autoTransition(action: ShipmentAction.Start | ShipmentAction.Deliver, at: Date): Promise<boolean> {
    const shipment = this.shipment;
    if (!shipment.autoTransitions) return false;
    let transition: ReturnType<typeof transitionOf>;
    try {
      transition = transitionOf(shipment.status, action);
    } catch (error) {
      if (error instanceof DomainError) return false;
      throw error;
    }
    Object.assign(shipment, { status: transition.to, [transition.stamp]: at, version: shipment.version + 1, updatedAt: new Date() });
    await this.shipments.save(this.manager, shipment);
    await recordShipmentEvent(this.manager, transitionEvent(transition.to), shipment);
    return true;
  }

  /**
   * Sets the shipment's `excursions` totals, in milliseconds of event time, never lower than they are (the
   * evaluation's totals only grow). No event, no new `updatedAt` or version.
   */
  setExcursions(temperatureMs: number, humidityMs: number): Promise<void> {
    return this.shipments.setExcursions(this.manager, this.scope.shipmentId, temperatureMs, humidityMs);
  }

  /**
   * Opens an alert (`alert.opened`) unless the shipment has an open one of that device and kind (the
   * partial unique index decides, whichever replica asks) or one with this `startedAt` (the same decision
   * again). `opened` is false then, and `alert` is that alert. Beyond the shipment's hourly allowance of
   * alerts the alert is not opened: `suppressed`, `alert` null (`AlertLifecycle.open`).
   */
  openAlert(opening: { deviceId: string | null; kind: AlertKind; startedAt: Date; threshold: number; peakValue?: number | null }): Promise<AlertOpened> {
    return this.alerts.open(this.manager, this.account, { ...opening, shipmentId: this.scope.shipmentId, peakValue: opening.peakValue ?? null });
  }

  /**
   * Moves the open alert's `peakValue` to `value` when it is worse (lower for TemperatureLow, HumidityLow
   * and BatteryLow, else higher), so a replay cannot move it back. The alert when it changed; no event.
   */
  raisePeak(key: { deviceId: string | null; kind: AlertKind }, value: number): Promise<Alert | null> {
    return this.alerts.raisePeak(this.manager, { ...key, shipmentId: this.scope.shipmentId }, value);
  }

  /** Closes the open alert of that device and kind at `endedAt` (`alert.closed`); null when none is open. */
  async closeAlert(key: { deviceId: string | null; kind: AlertKind; endedAt: Date }): Promise<Alert | null> {
    const [closed] = await this.alerts.close(this.manager, { shipmentId: this.scope.shipmentId, deviceId: key.deviceId, kind: key.kind }, key.endedAt);
    return closed ?? null;
  }

  /**
   * Closes every open alert of the shipment, or with `deviceId` those of one device (a released device;
   * null: the shipment-wide ones), at `endedAt`, each with its `alert.closed`.
   */
  closeOpenAlerts(selection: { deviceId?: string | null; endedAt: Date }): Promise<Alert[]> {
    return this.alerts.close(this.manager, { shipmentId: this.scope.shipmentId, deviceId: selection.deviceId }, selection.endedAt);
  }

  /**
   * Adds an excursion, from its first out-of-range reading to the first reading back in range, to the
   * shipment's `excursions` total of `measure`, once: the same excursion (device, measure, `startedAt`)
   * again adds nothing. Returns whether it added. No event, no new `updatedAt` or version.
   */
  async addExcursion(excursion: { deviceId: string | null; measure: ExcursionMeasure; startedAt: Date; endedAt: Date }): Promise<boolean> {
    const recorded = await this.excursions.insert(this.manager, { ...excursion, shipmentId: this.scope.shipmentId });
    if (recorded) {
      await this.shipments.addExcursion(this.manager, this.scope.shipmentId, excursion.measure, excursion.endedAt.getTime() - excursion.startedAt.getTime());
    }
    return recorded;
  }

  /**
   * Records an arrival at `poiId` at `arrivedAt` (event time) with its `shipment.arrived`, once: the
   * same arrival again records and publishes nothing. Returns whether it recorded it.
   */
  async recordArrival(arrival: { poiId: string; arrivedAt: Date }): Promise<boolean> {
    const now = new Date();
    const recorded = await this.visits.insert(this.manager, {
      id: uuidv7(),
      tenantId: this.scope.tenantId,
      accountId: this.scope.accountId,
      shipmentId: this.scope.shipmentId,
      poiId: arrival.poiId,
      arrivedAt: arrival.arrivedAt,
      departedAt: null,
      createdAt: now,
      updatedAt: now,
    });
    if (recorded) await this.recordVisitEvent(EventType.ShipmentArrived, arrival.poiId, arrival.arrivedAt, null);
    return recorded;
  }

  /**
   * Records the departure from the visit that arrived at `arrivedAt`, with its `shipment.departed`, once:
   * a visit that has departed keeps its `departedAt` (a published event is never changed), and one that
   * was never recorded is not created. Returns whether it recorded it.
   */
  async recordDeparture(departure: { poiId: string; arrivedAt: Date; departedAt: Date }): Promise<boolean> {
    const key = { shipmentId: this.scope.shipmentId, poiId: departure.poiId, arrivedAt: departure.arrivedAt };
    const recorded = await this.visits.depart(this.manager, key, departure.departedAt, new Date());
    if (recorded) await this.recordVisitEvent(EventType.ShipmentDeparted, departure.poiId, departure.arrivedAt, departure.departedAt);
    return recorded;
  }

  get account(): AccountScope {
    return { tenantId: this.scope.tenantId, accountId: this.scope.accountId };
  }

  private async recordVisitEvent(type: EventType, poiId: string, arrivedAt: Date, departedAt: Date | null): Promise<void> {
    const data: VisitEventData = {
      shipmentId: this.scope.shipmentId,
      poiId,
      arrivedAt: arrivedAt.toISOString(),
      departedAt: departedAt && departedAt.toISOString(),
    };
    await recordEvents(this.manager, [{ ...this.account, type, data }]);
  }
}
