import { Inject, Injectable } from '@nestjs/common';
import { type AccountScope, type Alert, type AlertKind, AlertStatus, type AlertSuppressedData, EventType, LOW_ALERT_KINDS } from '@tracking/contracts';
import { recordEvents } from '@tracking/outbox';
import type { EntityManager } from 'typeorm';
import { v7 as uuidv7 } from 'uuid';
import type { OmsConfig } from '../config.js';
import { OMS_CONFIG } from '../tokens.js';
import type { AlertEntity } from './alert.entity.js';
import { AlertRepository, type OpenAlertSelection } from './alert.repository.js';

/** What opens an alert: the evaluation's decision. */
export interface AlertOpening {
  shipmentId: string;
  /** Null for a shipment-wide alert (SignalLoss). */
  deviceId: string | null;
  kind: AlertKind;
  /** Event time: the first out-of-range reading (SignalLoss: last receipt + maxSilenceSeconds). */
  startedAt: Date;
  threshold: number;
  peakValue: number | null;
}

const HOUR_MS = 3_600_000;

/** What `open` did: opened the alert, found it (open, or a replayed decision), or suppressed it (`alert` null). */
export type AlertOpened = { alert: Alert; opened: boolean; suppressed?: undefined } | { alert: null; opened: false; suppressed: true };

/**
 * Every change of an alert, each with its event (`alert.opened`, `alert.closed`, `alert.acknowledged`,
 * `alert.suppressed`) written to the outbox in the caller's transaction: the event is published exactly
 * when the change commits.
 */
@Injectable()
export class AlertLifecycle {
  private readonly perHour: number;

  constructor(
    private readonly alerts: AlertRepository,
    @Inject(OMS_CONFIG) config: OmsConfig,
  ) {
    this.perHour = config.ALERTS_PER_SHIPMENT_PER_HOUR;
  }

  /**
   * Opens the alert unless the shipment has an open one of that device and kind, or has had one for this
   * excursion (same `startedAt`, a replayed decision). `opened` says whether this call opened it; the
   * alert is the one that is (or was) open.
   *
   * A shipment opens at most `ALERTS_PER_SHIPMENT_PER_HOUR` alerts per clock hour (UTC, server time):
   * beyond it the alert is not opened (`suppressed`, `alert` null), and the hour's first such decision
   * records one `alert.suppressed` (docs/alerts-and-visits.md, "Alerts per shipment and hour").
   */
  async open(manager: EntityManager, scope: AccountScope, opening: AlertOpening): Promise<AlertOpened> {
    const now = new Date();
    const windowStart = new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS);
    const key = { ...scope, shipmentId: opening.shipmentId };
    if ((await this.alerts.countOpenedSince(manager, key, windowStart, this.perHour)) >= this.perHour) {
      // A replayed decision finds its alert; a new one is suppressed.
      const existing = await this.alerts.findOpenOrExcursion(manager, opening);
      if (existing) return { alert: toAlert(existing), opened: false };
      if (await this.alerts.recordSuppression(manager, key, windowStart, now)) {
        const until = new Date(windowStart.getTime() + HOUR_MS).toISOString();
        const data: AlertSuppressedData = { shipmentId: opening.shipmentId, deviceId: opening.deviceId, kind: opening.kind, until };
        await recordEvents(manager, [{ ...scope, type: EventType.AlertSuppressed, data }]);
      }
      return { alert: null, opened: false, suppressed: true };
    }
    const inserted = await this.alerts.insertOpen(manager, {
      id: uuidv7(),
      tenantId: scope.tenantId,
      accountId: scope.accountId,
      shipmentId: opening.shipmentId,
      deviceId: opening.deviceId,
      kind: opening.kind,
      status: AlertStatus.Open,
      startedAt: opening.startedAt,
      endedAt: null,
      threshold: opening.threshold,
      peakValue: opening.peakValue,
      acknowledgedAt: null,
      createdAt: now,
      updatedAt: now,
    });
    if (inserted) {
      await this.record(manager, EventType.AlertOpened, [inserted]);
      return { alert: toAlert(inserted), opened: true };
    }
    const existing = await this.alerts.findOpenOrExcursion(manager, opening);
    if (!existing) throw new Error(`alert of shipment ${opening.shipmentId} neither inserted nor found`);
    return { alert: toAlert(existing), opened: false };
  }

  /** Moves the open alert's `peakValue` to `value` when it is worse; the alert when it changed. No event. */
  async raisePeak(
    manager: EntityManager,
    key: { shipmentId: string; deviceId: string | null; kind: AlertKind },
    value: number,
  ): Promise<Alert | null> {
    const changed = await this.alerts.raisePeak(manager, key, value, LOW_ALERT_KINDS.includes(key.kind), new Date());
    return changed && toAlert(changed);
  }

  /** Closes the selected open alerts at `endedAt`, each with its `alert.closed`; returns them. */
  async close(manager: EntityManager, selection: OpenAlertSelection, endedAt: Date): Promise<Alert[]> {
    const closed = await this.alerts.closeOpen(manager, selection, endedAt, new Date());
    await this.record(manager, EventType.AlertClosed, closed);
    return closed.map(toAlert);
  }

  /** Acknowledges the account's alert unless it is; the alert when this call acknowledged it. */
  async acknowledge(manager: EntityManager, scope: AccountScope, alertId: string): Promise<Alert | null> {
    const acknowledged = await this.alerts.acknowledge(manager, scope, alertId, new Date());
    if (!acknowledged) return null;
    await this.record(manager, EventType.AlertAcknowledged, [acknowledged]);
    return toAlert(acknowledged);
  }

  private async record(manager: EntityManager, type: EventType, alerts: readonly AlertEntity[]): Promise<void> {
    await recordEvents(
      manager,
      alerts.map((alert) => ({ tenantId: alert.tenantId, accountId: alert.accountId, type, data: toAlert(alert) })),
    );
  }
}

/** An alert as the API shows it. */
export function toAlert(entity: AlertEntity): Alert {
  return {
    id: entity.id,
    shipmentId: entity.shipmentId,
    deviceId: entity.deviceId,
    kind: entity.kind,
    status: entity.status,
    startedAt: entity.startedAt.toISOString(),
    endedAt: entity.endedAt && entity.endedAt.toISOString(),
    threshold: entity.threshold,
    peakValue: entity.peakValue,
    acknowledgedAt: entity.acknowledgedAt && entity.acknowledgedAt.toISOString(),
    createdAt: entity.createdAt.toISOString(),
    updatedAt: entity.updatedAt.toISOString(),
  };
}
