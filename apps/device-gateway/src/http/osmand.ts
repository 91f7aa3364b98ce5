import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError, parseDateTime } from '@tracking/core';

/** One knot in metres per second (1852 m per hour). */
export const KNOT_MPS = 1852 / 3600;
/** Below this a numeric `timestamp` is Unix seconds, from it Unix milliseconds (OsmAnd sends either). */
const SECONDS_BOUND = 2 ** 31;

/** A tracker's position as a reading of our JSON shape, and the `id` it claims. */
export interface DeviceReport {
  id: string;
  reading: Record<string, unknown>;
}

/** Where each field of the reading came from, to name the tracker's own parameter in a 400. */
export type FieldNames = Record<string, string>;

/** OsmAnd: our reading fields and the parameters they come from. */
export const OSMAND_FIELDS: FieldNames = {
  // A reading with nothing to store: the position is what OsmAnd sends.
  '': 'lat',
  recordedAt: 'timestamp',
  location: 'lat',
  'location.lat': 'lat',
  'location.lng': 'lon',
  'location.speedMps': 'speed',
  'location.headingDegrees': 'bearing',
  'location.altitudeMeters': 'altitude',
  'location.accuracyMeters': 'accuracy',
  batteryPercent: 'batt',
};

/** Traccar Client's JSON: our reading fields and the paths they come from. */
export const TRACCAR_FIELDS: FieldNames = {
  '': 'location.coords',
  recordedAt: 'location.timestamp',
  location: 'location.coords',
  'location.lat': 'location.coords.latitude',
  'location.lng': 'location.coords.longitude',
  'location.speedMps': 'location.coords.speed',
  'location.headingDegrees': 'location.coords.heading',
  'location.altitudeMeters': 'location.coords.altitude',
  'location.accuracyMeters': 'location.coords.accuracy',
  batteryPercent: 'location.battery.level',
};

/**
 * The OsmAnd protocol's parameters (query string or form body) as a reading: `id`, `lat`, `lon`,
 * `timestamp` (Unix seconds below 2^31, else Unix milliseconds, or RFC 3339), and optionally `speed`
 * (knots), `bearing`, `altitude`, `accuracy`, `batt` (percent); a negative speed, bearing or accuracy
 * means unknown. Unknown parameters are ignored. A missing or unreadable parameter is 400 naming it;
 * bounds are left to the judgement of readings.
 */
export function osmandReport(params: URLSearchParams): DeviceReport {
  const id = required(params, 'id');
  const recordedAt = timestampOf(required(params, 'timestamp'), 'timestamp');
  const lat = optionalNumber(params, 'lat');
  const lon = optionalNumber(params, 'lon');
  if ((lat === null) !== (lon === null)) {
    const missing = lat === null ? 'lat' : 'lon';
    throw DomainError.invalidParameter(missing, ParameterIssue.Required, `${missing} is required with ${missing === 'lat' ? 'lon' : 'lat'}.`);
  }
  const reading: Record<string, unknown> = { recordedAt };
  if (lat !== null && lon !== null) {
    const speed = unknownIfNegative(optionalNumber(params, 'speed'));
    reading.location = {
      lat,
      lng: lon,
      accuracyMeters: unknownIfNegative(optionalNumber(params, 'accuracy')),
      altitudeMeters: optionalNumber(params, 'altitude'),
      speedMps: speed === null ? null : speed * KNOT_MPS,
      headingDegrees: unknownIfNegative(optionalNumber(params, 'bearing')),
    };
  }
  const battery = optionalNumber(params, 'batt');
  if (battery !== null) reading.batteryPercent = battery;
  return { id, reading };
}

/**
 * Traccar Client's JSON body: `{device_id, location: {timestamp (RFC 3339), coords: {latitude,
 * longitude, accuracy, speed (m/s), heading, altitude}, battery: {level (0..1)}}}`; -1 (any negative)
 * for speed, heading, accuracy or the battery level means unknown.
 */
export function traccarReport(body: unknown): DeviceReport {
  const root = objectAt(body, 'body');
  const id = root.device_id;
  if (id === undefined || id === null) throw DomainError.invalidParameter('device_id', ParameterIssue.Required, 'device_id is required.');
  if (typeof id !== 'string' || id.length === 0) throw DomainError.invalidParameter('device_id', ParameterIssue.InvalidFormat, 'device_id must be a string.');
  const location = objectAt(root.location, 'location');
  const timestamp = location.timestamp;
  if (timestamp === undefined) throw DomainError.invalidParameter('location.timestamp', ParameterIssue.Required, 'location.timestamp is required.');
  if (typeof timestamp !== 'string' && typeof timestamp !== 'number') {
    throw DomainError.invalidParameter('location.timestamp', ParameterIssue.InvalidFormat, 'location.timestamp must be an RFC 3339 date-time.');
  }
  const reading: Record<string, unknown> = { recordedAt: timestampOf(String(timestamp), 'location.timestamp') };
  const coords = objectAt(location.coords, 'location.coords');
  const number = (key: string) => jsonNumber(coords[key], `location.coords.${key}`);
  const lat = number('latitude');
  const lng = number('longitude');
  if (lat === null || lng === null) {
    const missing = lat === null ? 'latitude' : 'longitude';
    throw DomainError.invalidParameter(`location.coords.${missing}`, ParameterIssue.Required, `location.coords.${missing} is required.`);
  }
  reading.location = {
    lat,
    lng,
    accuracyMeters: unknownIfNegative(number('accuracy')),
    altitudeMeters: number('altitude'),
    speedMps: unknownIfNegative(number('speed')),
    headingDegrees: unknownIfNegative(number('heading')),
  };
  if (location.battery !== undefined && location.battery !== null) {
    const level = unknownIfNegative(jsonNumber(objectAt(location.battery, 'location.battery').level, 'location.battery.level'));
    if (level !== null) {
      if (level > 1) throw DomainError.invalidParameter('location.battery.level', ParameterIssue.OutOfRange, 'location.battery.level is a fraction from 0 to 1.');
      reading.batteryPercent = level * 100;
    }
  }
  return { id, reading };
}

/** An RFC 3339 date-time, or Unix seconds (below 2^31) or milliseconds, as RFC 3339 with milliseconds. */
export function timestampOf(text: string, name: string): string {
  const trimmed = text.trim();
  let epochMs: number;
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    const value = Number(trimmed);
    epochMs = Math.round(value < SECONDS_BOUND ? value * 1000 : value);
  } else {
    const parsed = parseDateTime(trimmed);
    if (!parsed) throw DomainError.invalidParameter(name, ParameterIssue.InvalidFormat, `${name} must be Unix seconds, Unix milliseconds or an RFC 3339 date-time.`);
    epochMs = parsed.getTime();
  }
  const date = new Date(epochMs);
  if (Number.isNaN(date.getTime()) || epochMs > 253_402_300_799_999) {
    throw DomainError.invalidParameter(name, ParameterIssue.OutOfRange, `${name} lies outside the years 1970 to 9999.`);
  }
  return date.toISOString();
}

function required(params: URLSearchParams, name: string): string {
  const value = params.get(name);
  if (value === null || value === '') throw DomainError.invalidParameter(name, ParameterIssue.Required, `${name} is required.`);
  return value;
}

function optionalNumber(params: URLSearchParams, name: string): number | null {
  const value = params.get(name);
  if (value === null || value.trim() === '') return null;
  const number = Number(value);
  if (!Number.isFinite(number)) throw DomainError.invalidParameter(name, ParameterIssue.InvalidFormat, `${name} must be a number.`);
  return number;
}

function jsonNumber(value: unknown, name: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw DomainError.invalidParameter(name, ParameterIssue.InvalidFormat, `${name} must be a number.`);
  return value;
}

function unknownIfNegative(value: number | null): number | null {
  return value === null || value < 0 ? null : value;
}

function objectAt(value: unknown, name: string): Record<string, unknown> {
  if (value === undefined || value === null) {
    if (name === 'body') throw new DomainError(ErrorCode.MalformedRequest, 'The request body must be a JSON object.');
    throw DomainError.invalidParameter(name, ParameterIssue.Required, `${name} is required.`);
  }
  if (typeof value !== 'object' || Array.isArray(value)) {
    if (name === 'body') throw new DomainError(ErrorCode.MalformedRequest, 'The request body must be a JSON object.');
    throw DomainError.invalidParameter(name, ParameterIssue.InvalidFormat, `${name} must be an object.`);
  }
  return value as Record<string, unknown>;
}

/**
 * The tracker's own name for a rejected field of its single reading (`readings.0.location.lat` -> `lat`),
 * so that a 400 names what the tracker sent.
 */
export function trackerField(field: string, names: FieldNames): string {
  const path = field.replace(/^readings\.0\.?/, '');
  return names[path] ?? path;
}
