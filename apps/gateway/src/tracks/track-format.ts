/* eslint-disable @typescript-eslint/no-non-null-assertion -- loops over parallel arrays indexed within their lengths: `!` states the bound the loop checks, which noUncheckedIndexedAccess cannot see. */
import type { Track, TrackReply } from '@tracking/contracts';

/** The media type of an RFC 7946 GeoJSON answer. */
export const GEO_JSON = 'application/geo+json';

/**
 * Whether the client prefers GeoJSON to JSON by its `Accept` header (RFC 9110 quality values; the more
 * specific range wins a tie with a wildcard). Without the header, or when it names neither, JSON.
 */
export function prefersGeoJson(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  let geo = -1;
  let json = -1;
  for (const range of accept.split(',')) {
    const [type, ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const qParam = params.find((param) => param.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!Number.isFinite(q)) continue;
    if (type === GEO_JSON) geo = Math.max(geo, q);
    else if (type === 'application/json') json = Math.max(json, q);
  }
  return geo > 0 && geo >= json;
}

/** The DMS's columns as the API's track. */
export function trackOf(shipmentId: string, window: { from?: number; to?: number }, reply: TrackReply): Track {
  const points = reply.t.map((t, i) => ({
    recordedAt: new Date(t).toISOString(),
    lat: reply.lat[i]!,
    lng: reply.lng[i]!,
    accuracyMeters: reply.accuracyMeters[i] ?? null,
    deviceId: reply.deviceIds[reply.device[i]!]!,
  }));
  return {
    shipmentId,
    points,
    metadata: {
      from: window.from === undefined ? null : new Date(window.from).toISOString(),
      to: window.to === undefined ? null : new Date(window.to).toISOString(),
      count: points.length,
      totalPoints: reply.totalPoints,
      simplified: reply.simplified,
    },
  };
}

type Position = [number, number];
type Geometry = { type: 'LineString'; coordinates: Position[] } | { type: 'Point'; coordinates: Position };

/** An RFC 7946 FeatureCollection of the track. */
export interface TrackFeatureCollection {
  type: 'FeatureCollection';
  features: { type: 'Feature'; geometry: Geometry; properties: { deviceId: string; recordedAt: string[]; accuracyMeters: (number | null)[] } }[];
}

/**
 * One Feature per device with points, in the order of their first point: a LineString of `[lng, lat]`
 * positions in `recordedAt` order, or a Point when the device has one position in the window (a
 * LineString needs two, RFC 7946 3.1.4). `properties.recordedAt` and `accuracyMeters` run beside the
 * coordinates.
 */
export function trackFeatures(reply: TrackReply): TrackFeatureCollection {
  const byDevice = new Map<number, { coordinates: Position[]; recordedAt: string[]; accuracyMeters: (number | null)[] }>();
  reply.t.forEach((t, i) => {
    const device = reply.device[i]!;
    let line = byDevice.get(device);
    if (line === undefined) byDevice.set(device, (line = { coordinates: [], recordedAt: [], accuracyMeters: [] }));
    line.coordinates.push([reply.lng[i]!, reply.lat[i]!]);
    line.recordedAt.push(new Date(t).toISOString());
    line.accuracyMeters.push(reply.accuracyMeters[i] ?? null);
  });
  return {
    type: 'FeatureCollection',
    features: [...byDevice].map(([device, line]) => ({
      type: 'Feature',
      geometry:
        line.coordinates.length === 1 ? { type: 'Point', coordinates: line.coordinates[0]! } : { type: 'LineString', coordinates: line.coordinates },
      properties: { deviceId: reply.deviceIds[device]!, recordedAt: line.recordedAt, accuracyMeters: line.accuracyMeters },
    })),
  };
}
