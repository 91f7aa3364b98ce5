/** Mean Earth radius (IUGG), metres: the sphere every distance here is measured on. */
export const EARTH_RADIUS_METERS = 6371008.8;

const RAD = Math.PI / 180;
const DEG = 180 / Math.PI;

/** Great-circle distance in metres between two positions (haversine, exact at every distance on the sphere). */
export function distanceMeters(lat1: number, lng1: number, lat2: number, lng2: number): number {
  const dLat = (lat2 - lat1) * RAD;
  const dLng = (lng2 - lng1) * RAD;
  const a = Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * RAD) * Math.cos(lat2 * RAD) * Math.sin(dLng / 2) ** 2;
  return 2 * EARTH_RADIUS_METERS * Math.asin(Math.min(1, Math.sqrt(a)));
}

/** A longitude/latitude rectangle in degrees: [minLng, minLat, maxLng, maxLat]. */
export type Box = [number, number, number, number];

/** Slack added to every box so that rounding never drops a point lying exactly on a circle. */
const EPSILON_DEG = 1e-9;

/**
 * The rectangles covering a spherical cap (every point within `radiusMeters` of the centre): one box,
 * or two when the cap crosses the antimeridian, or a full band of longitudes when it holds a pole.
 * The longitude half-width is the exact extent of a cap, asin(sin r / cos lat) (Chamberlain & Duquette,
 * "Bounding coordinates", http://janmatuschek.de/LatitudeLongitudeBoundingCoordinates).
 */
export function capBoxes(lat: number, lng: number, radiusMeters: number): Box[] {
  const angular = Math.max(0, radiusMeters) / EARTH_RADIUS_METERS;
  const latRad = lat * RAD;
  const minLat = (latRad - angular) * DEG - EPSILON_DEG;
  const maxLat = (latRad + angular) * DEG + EPSILON_DEG;
  if (maxLat >= 90 || minLat <= -90 || angular >= Math.PI / 2) {
    return [[-180, Math.max(-90, minLat), 180, Math.min(90, maxLat)]];
  }
  const halfWidth = Math.asin(Math.min(1, Math.sin(angular) / Math.cos(latRad))) * DEG + EPSILON_DEG;
  const minLng = lng - halfWidth;
  const maxLng = lng + halfWidth;
  if (halfWidth >= 180) return [[-180, minLat, 180, maxLat]];
  if (minLng < -180) return [[minLng + 360, minLat, 180, maxLat], [-180, minLat, maxLng, maxLat]];
  if (maxLng > 180) return [[minLng, minLat, 180, maxLat], [-180, minLat, maxLng - 360, maxLat]];
  return [[minLng, minLat, maxLng, maxLat]];
}
