import type { AccountScope, PageRequest } from '../paging.js';
import type { ShipmentScope } from './sets.js';

/** What an alert is about (docs/alerts-and-visits.md). */
export enum AlertKind {
  TemperatureHigh = 'TemperatureHigh',
  TemperatureLow = 'TemperatureLow',
  HumidityHigh = 'HumidityHigh',
  HumidityLow = 'HumidityLow',
  Shock = 'Shock',
  Light = 'Light',
  BatteryLow = 'BatteryLow',
  SignalLoss = 'SignalLoss',
}

export enum AlertStatus {
  Open = 'Open',
  Closed = 'Closed',
}

/**
 * The kinds whose worst value is the smallest one: their `peakValue` only ever goes down. Every other
 * kind's `peakValue` only ever goes up.
 */
export const LOW_ALERT_KINDS: readonly AlertKind[] = [AlertKind.TemperatureLow, AlertKind.HumidityLow, AlertKind.BatteryLow];

/** An alert as the API shows it. Timestamps are RFC 3339 UTC strings with milliseconds. */
export interface Alert {
  id: string;
  shipmentId: string;
  deviceId: string | null;
  kind: AlertKind;
  status: AlertStatus;
  startedAt: string;
  endedAt: string | null;
  threshold: number;
  peakValue: number | null;
  acknowledgedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/** Filters of `GET /alerts`; every given filter must match. */
export interface AlertFilters {
  /** Any of these statuses. */
  status?: AlertStatus[];
  /** Any of these kinds. */
  kind?: AlertKind[];
  shipmentId?: string;
  deviceId?: string;
}

export interface ListAlertsRequest extends AccountScope {
  page: PageRequest;
  filters: AlertFilters;
}
export interface AlertRequest extends AccountScope {
  alertId: string;
}

/** A stay of a shipment at a point of interest (`GET /shipments/{id}/visits`). */
export interface Visit {
  poiId: string;
  arrivedAt: string;
  /** Null while the shipment is still there (and for good when it closed there). */
  departedAt: string | null;
}

export interface ListVisitsRequest extends ShipmentScope {
  page: PageRequest;
}
