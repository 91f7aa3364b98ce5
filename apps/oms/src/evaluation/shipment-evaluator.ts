import { Inject, Injectable } from '@nestjs/common';
import { type AccountScope, type AlertKind, ShipmentAction, type ShipmentScope } from '@tracking/contracts';
import {
  type AlertKind as GeofenceAlertKind,
  closeAlerts,
  evaluate,
  type EvaluationOptions,
  excursionsOf,
  type GeofenceChange,
  type GeofenceReading,
  type GeofenceState,
  openSignalLoss,
  type PlaceIndex,
  restore,
  settle,
  settleDueAt,
  signalLossDue,
  withoutPending,
} from '@tracking/geofence';
import type { Lease } from '@tracking/outbox';
import { LRUCache } from 'lru-cache';
import type { EvaluationRecord } from './evaluation-record.repository.js';
import { EvaluationStore, type ShipmentOutcomes } from './evaluation-store.js';
import type { ShipmentEntity } from '../shipments/shipment.entity.js';
import type { OmsConfig } from '../config.js';
import { DmsClient } from '../dms/dms.client.js';
import { EtaTracker } from '../eta/eta-tracker.js';
import { OMS_CONFIG } from '../tokens.js';
import { EvaluationMetrics } from './evaluation-metrics.js';
import { PlaceCache } from './place-cache.js';

/** Shipments evaluated per transaction at most (the consumer and the timers cut their work in such chunks). */
export const EVALUATION_CHUNK = 100;

/**
 * Full states kept in memory per process: at most this many shipments, and at most this many retained
 * readings over all of them (some 100 bytes each). An evicted state is restored when next needed.
 */
const CACHED_STATES = 20000;
const CACHED_READINGS = 2_000_000;

/**
 * Evaluates shipments in chunks (docs/geofence-evaluation.md, "In the service"): in one transaction with
 * the chunk's evaluation records locked, it takes each shipment's engine state (from memory when this
 * process made the last evaluation, else restored from the stored state and the readings the DMS holds
 * since its horizon), evaluates the new readings, fires the timers that are due, records every change
 * (visits, alerts, autoTransitions, excursions, with their events) and stores the new states. A crash
 * before the commit leaves everything as it was; the same readings evaluated again decide the same
 * things, recorded once.
 */
@Injectable()
export class ShipmentEvaluator {
  private readonly states = new LRUCache<string, { version: number; state: GeofenceState }>({
    max: CACHED_STATES,
    maxSize: CACHED_READINGS,
    sizeCalculation: (entry) => entry.state.pending.length + 1,
  });

  constructor(
    private readonly store: EvaluationStore,
    private readonly places: PlaceCache,
    private readonly dms: DmsClient,
    private readonly metrics: EvaluationMetrics,
    private readonly eta: EtaTracker,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
  ) {}

  /**
   * Evaluates several shipments in one transaction (one commit for them all: the evaluation's cost is
   * mostly round trips and commits), all of one partition of the readings stream, whose `lease` this
   * process holds (checked in the transaction: `EvaluationStore.forEvaluations`). `placesOf` gives an
   * account's places when the caller has them (a batch of many shipments of one account looks them up
   * once). All or nothing: a failure leaves every shipment of the call as it was.
   */
  async evaluateMany(
    items: readonly (ShipmentScope & { readings: readonly GeofenceReading[] })[],
    lease: Lease,
    now: number,
    placesOf: (account: AccountScope) => Promise<PlaceIndex> = (account) => this.places.forAccount(account),
  ): Promise<void> {
    const readingsOf = new Map(items.map((item) => [item.shipmentId.toLowerCase(), item.readings]));
    const done = new Map<string, { version: number; state: GeofenceState }>();
    // The places before the transaction: looking them up inside it would take a second pooled connection
    // while holding one, and a few chunks doing that at once could wait for each other forever.
    const places = new Map<string, PlaceIndex>();
    for (const item of items) {
      const key = `${item.tenantId}/${item.accountId}`;
      if (!places.has(key)) places.set(key, await placesOf(item));
    }
    // A failure (a deadlock, the lease lost, the DMS away) rolls the chunk back and leaves the states in
    // memory as they were: the engine never changes a state it is given, so each still matches its
    // record's version, and the next try needs no restore.
    await this.store.forEvaluations(items, lease, async (evaluations) => {
      for (const { outcomes, record, closing } of evaluations) {
        const shipment = outcomes.shipment;
        const index = places.get(`${shipment.tenantId}/${shipment.accountId}`);
        if (!index) throw new Error(`no places looked up for shipment ${shipment.id}`);
        const readings = readingsOf.get(shipment.id) ?? [];
        if (closing) {
          await this.evaluateClosed(outcomes, shipment, record, readings, now, index);
          continue;
        }
        const state = await this.evaluateOne(outcomes, shipment, record, readings, now, index);
        done.set(shipment.id, { version: record.version + 1, state });
      }
    });
    for (const shipmentId of readingsOf.keys()) {
      const evaluated = done.get(shipmentId);
      if (evaluated) this.states.set(shipmentId, evaluated);
      else this.states.delete(shipmentId);
    }
    const committed = Date.now();
    for (const item of items) this.metrics.evaluated(item.readings, committed);
  }

  private async evaluateOne(
    outcomes: ShipmentOutcomes,
    shipment: ShipmentEntity,
    record: EvaluationRecord,
    readings: readonly GeofenceReading[],
    now: number,
    places: PlaceIndex,
  ): Promise<GeofenceState> {
    const lateness = this.config.EVALUATION_LATENESS_SECONDS;
    const options = this.optionsOf(shipment, places, now);
    const changes: GeofenceChange[] = [];
    let state = await this.current(outcomes, shipment, record, options, changes);
    // With no readings (the timers), this publishes what a device silent for the bound no longer holds back.
    const result = evaluate(state, readings, options());
    state = result.state;
    changes.push(...result.changes);
    if (result.late > 0) this.metrics.lateReadings.inc(result.late);
    await this.record(outcomes, changes);
    const signalLoss = openSignalLoss(state, shipment.conditions, shipment.status, shipment.departedAt ?? 0, now);
    state = signalLoss.state;
    await this.record(outcomes, signalLoss.changes);
    await this.recordExcursions(outcomes, shipment, state);
    await this.eta.update(outcomes, shipment, state, places);
    const dueAt = earliest(settleDueAt(state, lateness, now), signalLossDue(state, shipment.conditions, shipment.status, shipment.departedAt ?? 0));
    outcomes.saveState(record.version, withoutPending(state), dueAt);
    return state;
  }

  /**
   * The last evaluation of a shipment that closed: everything it retained becomes final, as if its
   * lateness bound had passed (`settle`), then every alert still open in the engine ends at the moment it
   * closed (those the close already ended stay as they are; a device whose clock ran ahead of the close
   * moves that end to its newest reading, so that no alert ends before it started). So a visit or an
   * excursion that the readings before the close decide is recorded, with its events, rather than dropped
   * with the state. Readings arriving after this find no record and change nothing. No state is saved:
   * the record is deleted.
   */
  private async evaluateClosed(
    outcomes: ShipmentOutcomes,
    shipment: ShipmentEntity,
    record: EvaluationRecord,
    readings: readonly GeofenceReading[],
    now: number,
    places: PlaceIndex,
  ): Promise<void> {
    const options = this.optionsOf(shipment, places, now);
    const changes: GeofenceChange[] = [];
    let state = await this.current(outcomes, shipment, record, options, changes);
    if (readings.length > 0) {
      const result = evaluate(state, readings, options());
      state = result.state;
      changes.push(...result.changes);
      if (result.late > 0) this.metrics.lateReadings.inc(result.late);
    }
    if (state === null) return;
    const settled = settle(state, options());
    changes.push(...settled.changes);
    // When it closed; or the newest reading's time, should a device's clock have run ahead of the close.
    const closedAt = (shipment.completedAt ?? shipment.cancelledAt ?? new Date(now)).getTime();
    const closed = closeAlerts(settled.state, Math.max(closedAt, settled.state.watermark ?? closedAt));
    changes.push(...closed.changes);
    await this.record(outcomes, changes);
    await this.recordExcursions(outcomes, shipment, closed.state);
  }

  /** The engine's options as the shipment is now (an autoTransition changes its status); `now` is server time. */
  private optionsOf(shipment: ShipmentEntity, places: PlaceIndex, now: number): () => EvaluationOptions {
    const latenessSeconds = this.config.EVALUATION_LATENESS_SECONDS;
    return () => ({ places, conditions: shipment.conditions, status: shipment.status, latenessSeconds, now });
  }

  /**
   * The shipment's engine state as of its record: from memory when this process made the last
   * evaluation, else the stored state (with its devices' watermarks) and the readings it retained read
   * again from the DMS (every reading at or after the horizon), whose changes go to `changes`. Null: never
   * evaluated.
   */
  private async current(
    outcomes: ShipmentOutcomes,
    shipment: ShipmentEntity,
    record: EvaluationRecord,
    options: () => EvaluationOptions,
    changes: GeofenceChange[],
  ): Promise<GeofenceState | null> {
    const cached = this.states.get(shipment.id);
    if (cached?.version === record.version) return cached.state;
    if (!record.state) return null;
    // Another process evaluated last, or this one restarted.
    this.metrics.restores.inc();
    const retained = await this.dms.shipmentReadings({ ...outcomes.account, shipmentId: shipment.id, from: record.state.horizon ?? 0 });
    const restored = restore(record.state, retained, options());
    changes.push(...restored.changes);
    return restored.state;
  }

  /** Writes the shipment's excursion totals when they grew (the row's values as read with the lock). */
  private async recordExcursions(outcomes: ShipmentOutcomes, shipment: ShipmentEntity, state: GeofenceState): Promise<void> {
    const excursions = excursionsOf(state);
    const temperatureMs = Math.round(excursions.temperatureSeconds * 1000);
    const humidityMs = Math.round(excursions.humiditySeconds * 1000);
    if (temperatureMs > Number(shipment.excursionTemperatureMs) || humidityMs > Number(shipment.excursionHumidityMs)) {
      await outcomes.setExcursions(temperatureMs, humidityMs);
    }
  }

  /** Records the changes in their (event-time) order, each once, with the autoTransitions they imply. */
  private async record(outcomes: ShipmentOutcomes, changes: readonly GeofenceChange[]): Promise<void> {
    const shipment = outcomes.shipment;
    for (const change of changes) {
      switch (change.type) {
        case 'arrived': {
          const arrivedAt = new Date(change.arrivedAt);
          const recorded = await outcomes.recordArrival({ poiId: change.poiId, arrivedAt });
          if (recorded && change.poiId === shipment?.destinationId) await outcomes.autoTransition(ShipmentAction.Deliver, arrivedAt);
          break;
        }
        case 'departed': {
          const departedAt = new Date(change.departedAt);
          const recorded = await outcomes.recordDeparture({ poiId: change.poiId, arrivedAt: new Date(change.arrivedAt), departedAt });
          if (recorded && change.poiId === shipment?.originId) await outcomes.autoTransition(ShipmentAction.Start, departedAt);
          break;
        }
        case 'alertOpened': {
          const { opened } = await outcomes.openAlert({
            deviceId: change.deviceId,
            kind: alertKind(change.kind),
            startedAt: new Date(change.startedAt),
            threshold: change.threshold,
            peakValue: change.peakValue,
          });
          if (opened) this.metrics.alertsOpened.inc({ kind: change.kind });
          break;
        }
        case 'alertPeak':
          await outcomes.raisePeak(alertOfKey(change.key), change.peakValue);
          break;
        case 'alertClosed':
          if (change.peakValue !== null) await outcomes.raisePeak({ deviceId: change.deviceId, kind: alertKind(change.kind) }, change.peakValue);
          await outcomes.closeAlert({ deviceId: change.deviceId, kind: alertKind(change.kind), endedAt: new Date(change.endedAt) });
          break;
      }
    }
  }
}

/** The device and kind of an alert change's key, `<kind>/<deviceId or "shipment">/<startedAt>`. */
function alertOfKey(key: string): { deviceId: string | null; kind: AlertKind } {
  const [kind, device] = key.split('/');
  return { kind: alertKind(kind as GeofenceAlertKind), deviceId: device === undefined || device === 'shipment' ? null : device };
}

/** The engine's kinds are the API's, spelled the same (`alert-kinds.spec.ts`). */
export function alertKind(kind: GeofenceAlertKind): AlertKind {
  return kind as string as AlertKind;
}

function earliest(...moments: (Date | null)[]): Date | null {
  let first: Date | null = null;
  for (const moment of moments) if (moment !== null && (first === null || moment.getTime() < first.getTime())) first = moment;
  return first;
}
