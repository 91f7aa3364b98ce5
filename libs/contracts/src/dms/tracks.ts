import type { AccountScope } from '../paging.js';

/** `maxPoints` of `GET /shipments/{id}/track`: its bounds and default. */
export const MIN_TRACK_POINTS = 2;
export const MAX_TRACK_POINTS = 10000;
export const DEFAULT_TRACK_POINTS = 1000;

/** The gateway's question to the DMS, once the OMS has confirmed the shipment is the account's. */
export interface TrackRequest extends AccountScope {
  shipmentId: string;
  /** Epoch ms, half-open `[from, to)` on `recordedAt`. */
  from?: number;
  to?: number;
  deviceId?: string;
  maxPoints: number;
}

/**
 * A track in columns rather than the API's objects: at `maxPoints` 10000 the API's JSON is about 1.4 MB,
 * over NATS's default 1 MiB payload; these parallel arrays are a third of it. Point `i` is
 * `{recordedAt: t[i], lat: lat[i], lng: lng[i], accuracyMeters: accuracyMeters[i], deviceId: deviceIds[device[i]]}`,
 * in `recordedAt` order (ties by device id).
 */
export interface TrackReply {
  deviceIds: string[];
  device: number[];
  /** Epoch ms. */
  t: number[];
  lat: number[];
  lng: number[];
  accuracyMeters: (number | null)[];
  /** Positions in the window before simplification. */
  totalPoints: number;
  simplified: boolean;
}

/** A point of a track as the API shows it (docs/tracks.md). */
export interface TrackPoint {
  recordedAt: string;
  lat: number;
  lng: number;
  accuracyMeters: number | null;
  deviceId: string;
}

/** `GET /shipments/{id}/track` as JSON. */
export interface Track {
  shipmentId: string;
  points: TrackPoint[];
  metadata: { from: string | null; to: string | null; count: number; totalPoints: number; simplified: boolean };
}
