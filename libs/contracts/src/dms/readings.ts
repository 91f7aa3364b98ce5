import type { ErrorBody } from '../errors.js';
import type { AccountScope, PageMetadata, PageRequest } from '../paging.js';

/** Where a device was when it took a reading; `lat` and `lng` always together. */
export interface ReadingLocation {
  lat: number;
  lng: number;
  accuracyMeters: number | null;
  altitudeMeters: number | null;
  speedMps: number | null;
  headingDegrees: number | null;
}

/** A reading as the API shows it (docs/readings.md). Timestamps are RFC 3339 UTC with milliseconds. */
export interface Reading {
  id: string;
  deviceId: string;
  /** The device's clock. */
  recordedAt: string;
  /** The server's clock, when the DMS stored it. */
  receivedAt: string;
  location: ReadingLocation | null;
  temperatureC: number | null;
  humidityPercent: number | null;
  shockG: number | null;
  lightLux: number | null;
  batteryPercent: number | null;
  pressureHpa: number | null;
}

/** Entries of one `POST /readings`. */
export const MIN_READINGS_PER_BATCH = 1;
export const MAX_READINGS_PER_BATCH = 5000;

/**
 * The measurements of a reading in the order an `IngestEntry` carries them (and the `readings` table
 * names them): the API field, the column, and the bounds. Location fields first; `lat` and `lng` are the
 * location's own.
 */
export const READING_VALUES = [
  { field: 'location.lat', column: 'lat', min: -90, max: 90 },
  { field: 'location.lng', column: 'lng', min: -180, max: 180 },
  { field: 'location.accuracyMeters', column: 'accuracy_meters', min: 0, max: 100000 },
  { field: 'location.altitudeMeters', column: 'altitude_meters', min: -20000, max: 100000 },
  { field: 'location.speedMps', column: 'speed_mps', min: 0, max: 10000 },
  { field: 'location.headingDegrees', column: 'heading_degrees', min: 0, max: 360 },
  { field: 'temperatureC', column: 'temperature_c', min: -100, max: 150 },
  { field: 'humidityPercent', column: 'humidity_percent', min: 0, max: 100 },
  { field: 'shockG', column: 'shock_g', min: 0, max: 1000 },
  { field: 'lightLux', column: 'light_lux', min: 0, max: 200000 },
  { field: 'batteryPercent', column: 'battery_percent', min: 0, max: 100 },
  { field: 'pressureHpa', column: 'pressure_hpa', min: 300, max: 1200 },
] as const;

/** Positions in `IngestEntry.values` (`READING_VALUES`). */
export const ReadingValue = {
  Lat: 0,
  Lng: 1,
  AccuracyMeters: 2,
  BatteryPercent: 10,
} as const;

/**
 * One reading the gateway found well-formed, in a compact form for NATS: the device by id (lower case)
 * or serial number, `recordedAt` in epoch milliseconds, and the twelve measurements of `READING_VALUES`
 * (null when absent). `index` is the entry's position in the request.
 */
export interface IngestEntry {
  index: number;
  deviceId?: string;
  serialNumber?: string;
  recordedAt: number;
  values: (number | null)[];
}

/** One chunk of a batch (the gateway splits a batch so that each message stays under NATS's payload limit). */
export interface IngestReadingsRequest extends AccountScope {
  entries: IngestEntry[];
}

/** An entry refused on its own; the others of the batch are not affected. */
export interface RejectedReading {
  index: number;
  error: ErrorBody;
}

/** The answer of `POST /readings` (and of one chunk). */
export interface IngestResult {
  accepted: number;
  duplicates: number;
  /**
   * Of `accepted`, the readings recorded while their device was on no shipment (outside every assignment
   * period, matched on `recordedAt`): stored, and they move the device, but reach no track, visit or alert.
   */
  unassigned: number;
  rejected: RejectedReading[];
}

/** Filters of `GET /devices/{id}/readings` on `recordedAt`, half-open: `from` <= recordedAt < `to` (epoch ms). */
export interface ReadingFilters {
  from?: number;
  to?: number;
}

export interface ListReadingsRequest extends AccountScope {
  deviceId: string;
  page: PageRequest;
  filters: ReadingFilters;
}

export interface ReadingPage {
  readings: Reading[];
  metadata: PageMetadata;
}

/** The key of a reading in `(recordedAt, deviceId)` order; `recordedAt` in epoch ms. */
export interface ShipmentReadingKey {
  recordedAt: number;
  deviceId: string;
}

/** Readings the shipment's devices recorded within their assignment periods on it, recordedAt >= from, in (recordedAt, deviceId) order. */
export interface ShipmentReadingsRequest {
  tenantId: string;
  accountId: string;
  shipmentId: string;
  /** Epoch ms, inclusive. */
  from: number;
  /** Exclusive key of the previous page's last reading. */
  after?: ShipmentReadingKey;
  /** 1..MAX_SHIPMENT_READINGS_LIMIT. */
  limit: number;
}

/** The largest `limit` of a `ShipmentReadingsRequest`. */
export const MAX_SHIPMENT_READINGS_LIMIT = 5000;

/** At most `limit` readings; fewer, with a `next`, when their JSON would outgrow a NATS message. */
export interface ShipmentReadingsPage {
  readings: Reading[];
  /** the key to pass as `after` for the next page; null when this page is the last */
  next: ShipmentReadingKey | null;
}

/**
 * What the DMS publishes on JetStream for each accepted chunk of a batch (several messages when its JSON
 * outgrows 512 KiB), on `<prefix>readings.<tenantId>.<accountId>` in the stream `<PREFIX>READINGS`.
 */
export interface ReadingsPublished {
  tenantId: string;
  accountId: string;
  /** When the DMS received every reading of the message (their `receivedAt`). */
  receivedAt: string;
  /** One group per device and per shipment it was on when recording; a group may continue in the next message. */
  devices: PublishedDeviceReadings[];
}

export interface PublishedDeviceReadings {
  deviceId: string;
  /** The shipment the device was on when these readings were recorded; null: on none (no track, visit or alert). */
  shipmentId: string | null;
  /** In `recordedAt` order. */
  readings: PublishedReading[];
  /**
   * A release marker (then `readings` is empty): the device's assignment period on `shipmentId` ended at
   * this instant (unassign, set delete), published in the release's transaction.
   */
  releasedAt?: string;
}

/**
 * A reading as published: the API's `Reading` without `deviceId` (its group's) and `receivedAt` (its
 * message's), and without the fields that are null (absent means null, in `location` too). Messages
 * written before `receivedAt` moved to the message carry it on each reading, with every field.
 */
export interface PublishedReading {
  id: string;
  recordedAt: string;
  /** Only in messages written before it moved to the message. */
  receivedAt?: string;
  location?: {
    lat: number;
    lng: number;
    accuracyMeters?: number | null;
    altitudeMeters?: number | null;
    speedMps?: number | null;
    headingDegrees?: number | null;
  } | null;
  temperatureC?: number | null;
  humidityPercent?: number | null;
  shockG?: number | null;
  lightLux?: number | null;
  batteryPercent?: number | null;
  pressureHpa?: number | null;
}

/**
 * JetStream subjects of readings; the stream is `jetStreamName(prefix, 'READINGS')`. A message carries the
 * readings of the shipments of one partition (`readingsPartitionOf` in `@tracking/outbox`), the last token;
 * readings recorded on no shipment go on `none`. Each partition has its own consumer of the evaluation.
 */
export const ReadingSubjects = {
  of: (prefix: string, tenantId: string, accountId: string, partition: number | 'none'): string => `${prefix}readings.${tenantId}.${accountId}.${partition}`,
  partition: (prefix: string, partition: number): string => `${prefix}readings.*.*.${partition}`,
  all: (prefix: string): string => `${prefix}readings.>`,
};
