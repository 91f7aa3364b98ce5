import type { TrackStats } from './eta/track.js';

/** A timestamp as the service has it: RFC 3339 text, a Date, or epoch milliseconds. */
export type Instant = string | Date | number;

export type ShipmentStatus = 'Planned' | 'InTransit' | 'Delivered' | 'Completed' | 'Cancelled';

export type AlertKind =
  | 'TemperatureHigh'
  | 'TemperatureLow'
  | 'HumidityHigh'
  | 'HumidityLow'
  | 'Shock'
  | 'Light'
  | 'BatteryLow'
  | 'SignalLoss';

/** A shipment's `conditions` (API.md), every part optional. */
export interface Conditions {
  temperature?: { minC?: number | null; maxC?: number | null; minDurationSeconds?: number | null } | null;
  humidity?: { minPercent?: number | null; maxPercent?: number | null; minDurationSeconds?: number | null } | null;
  shock?: { maxG?: number | null } | null;
  light?: { maxLux?: number | null } | null;
  battery?: { minPercent?: number | null } | null;
  signalLoss?: { maxSilenceSeconds?: number | null } | null;
}

/** One reading of a device assigned to the shipment (fields the evaluation does not use may be present). */
export interface GeofenceReading {
  deviceId: string;
  recordedAt: Instant;
  receivedAt: Instant;
  location?: { lat: number; lng: number; accuracyMeters?: number | null } | null;
  temperatureC?: number | null;
  humidityPercent?: number | null;
  shockG?: number | null;
  lightLux?: number | null;
  batteryPercent?: number | null;
  /**
   * A release marker rather than a reading: the device's assignment to the shipment ended at `recordedAt`
   * (server time of the unassign, set delete or close). Folded in order like a reading; the device's
   * readings recorded from then on change nothing. Measurements on a marker are ignored.
   */
  release?: boolean;
}

/** A visit was found: the shipment stayed inside the place for its dwell time from `arrivedAt`. */
export interface ArrivedChange {
  type: 'arrived';
  /** Stable identity of the visit: `<poiId>/<arrivedAt>`. */
  key: string;
  poiId: string;
  arrivedAt: string;
}

/** A visit ended: the shipment stayed outside for the dwell time from `departedAt`. */
export interface DepartedChange {
  type: 'departed';
  key: string;
  poiId: string;
  arrivedAt: string;
  departedAt: string;
}

export interface AlertOpenedChange {
  type: 'alertOpened';
  /** Stable identity of the alert: `<kind>/<deviceId or "shipment">/<startedAt>`. */
  key: string;
  kind: AlertKind;
  deviceId: string | null;
  startedAt: string;
  threshold: number;
  peakValue: number | null;
}

/** The peak of an open alert moved (a record update, not an event). */
export interface AlertPeakChange {
  type: 'alertPeak';
  key: string;
  peakValue: number;
}

export interface AlertClosedChange {
  type: 'alertClosed';
  key: string;
  kind: AlertKind;
  deviceId: string | null;
  endedAt: string;
  peakValue: number | null;
}

export type GeofenceChange = ArrivedChange | DepartedChange | AlertOpenedChange | AlertPeakChange | AlertClosedChange;

export interface Excursions {
  temperatureSeconds: number;
  humiditySeconds: number;
}

/** A reading as the state retains it until it is final: short keys, absent measurements left out. */
export interface Sample {
  t: number;
  d: string;
  lat?: number;
  lng?: number;
  acc?: number;
  tc?: number;
  hu?: number;
  sh?: number;
  lx?: number;
  bt?: number;
  /** 1: a release marker of device `d` at `t` (folded after the device's reading of the same `t`). */
  x?: 1;
}

export interface PlaceTrack {
  /** The shipment is inside (some device is inside). */
  inside: boolean;
  /** The open visit's arrival, or null when no visit is open. */
  arrivedAt: number | null;
  /** With no open visit: when the shipment went inside; with one: when it went outside. Null: none pending. */
  since: number | null;
}

export interface AlertTrack {
  kind: AlertKind;
  deviceId: string;
  open: boolean;
  startedAt: number;
  peak: number;
}

export interface ExcursionTrack {
  totalMs: number;
  /** Devices out of range now. */
  out: string[];
  /** Since when at least one device is out of range, or null. */
  since: number | null;
}

/** What the state keeps of one device of the shipment (its per-device watermark). */
export interface DeviceTrack {
  /** The watermark: the newest `recordedAt` evaluated for the device (its assignment's start - 1 ms before any). */
  w: number;
  /** The newest `receivedAt` of its readings (or its assignment, if later): server time, for its silence. */
  r: number;
  /**
   * The device was released at this event time (its release marker, or its newest reading if later): it
   * no longer holds back the publish horizon, and its readings recorded at or after it are ignored.
   */
  end?: number;
}

/**
 * Everything the evaluation keeps for one shipment between two evaluations, JSON-serialisable (plain
 * numbers, strings, arrays and objects). Times are epoch milliseconds. See docs/geofence-evaluation.md.
 * Version 1 (no `devices`) is read as version 2 with no device known yet.
 */
export interface GeofenceState {
  v: 1 | 2;
  /** Readings recorded before this are ignored; everything before it is final and folded below. */
  horizon: number | null;
  /** The newest `recordedAt` accepted, over every device. */
  watermark: number | null;
  /** Per device: its watermark and last receipt; the publish horizon is the least watermark of those not silent. */
  devices: Record<string, DeviceTrack>;
  /** The event time the folded state has reached. */
  clock: number | null;
  /** The newest `receivedAt` of any reading given, accepted or not (for SignalLoss and settling). */
  lastReceivedAt: number | null;
  /** Accepted readings not yet final (recordedAt >= horizon), in (recordedAt, deviceId) order. */
  pending: Sample[];
  /** Per device: the places it is inside of. */
  inside: Record<string, string[]>;
  /** Per place with something going on (inside, open visit or pending change). */
  places: Record<string, PlaceTrack>;
  /** Per `<deviceId>/<kind>`: an excursion waiting for its minimum duration, or an open alert. */
  alerts: Record<string, AlertTrack>;
  temperature: ExcursionTrack;
  humidity: ExcursionTrack;
  /** The open SignalLoss alert's start, or null. */
  signalLoss: number | null;
  /** The track's figures for the estimated arrival (`eta/track.ts`); absent until a position is folded. */
  track?: TrackStats;
}
