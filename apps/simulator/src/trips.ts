/**
 * The demo trips: short real-looking drives between two places, planned in simulated seconds. Each is a
 * polyline along roads (`[lat, lng]`), 1.7 to 2.5 km, which a truck at city speeds drives in about two
 * minutes, so that a newcomer sees the whole trip (arrival at the origin, departure, the drive, arrival at
 * the destination) within about three.
 */
export interface Place {
  name: string;
  kind: 'Warehouse' | 'Customer';
  lat: number;
  lng: number;
  radiusMeters: number;
}

export interface TripPlan {
  name: string;
  origin: Place;
  destination: Place;
  /** From the origin's yard to the destination's gate. */
  route: readonly (readonly [number, number])[];
  /** A cold-chain trip: its temperature rises above the limit for a while on the way. */
  excursion: boolean;
}

/** Simulated seconds of each phase of every trip. */
export const PHASES = {
  /** Parked at the origin, loading: long enough for the arrival there to count (dwell). */
  atOrigin: 25,
  driving: 130,
  /** Parked at the destination, unloading: long enough for the arrival to count. */
  atDestination: 40,
} as const;

export const TRIP_SECONDS = PHASES.atOrigin + PHASES.driving + PHASES.atDestination;

/** How long a shipment must stay inside (or outside) a place before its arrival (or departure) counts. */
export const DWELL_SECONDS = 15;

/** The cold chain's limit, and the excursion's shape in simulated seconds. */
export const MAX_TEMPERATURE_C = 8;
const EXCURSION = { from: 60, peakAt: 80, to: 100, peakC: 11.5 } as const;
const BASE_TEMPERATURE_C = 4.5;

export const TRIPS: readonly TripPlan[] = [
  {
    name: 'Rotterdam: Waalhaven cold store to Charlois distribution centre',
    origin: { name: 'Waalhaven cold store', kind: 'Warehouse', lat: 51.8897, lng: 4.4334, radiusMeters: 150 },
    destination: { name: 'Charlois distribution centre', kind: 'Warehouse', lat: 51.8881, lng: 4.4655, radiusMeters: 150 },
    route: [
      [51.8897, 4.4334],
      [51.889, 4.438],
      [51.8878, 4.4425],
      [51.8869, 4.4472],
      [51.8866, 4.452],
      [51.887, 4.457],
      [51.8876, 4.462],
      [51.8881, 4.4655],
    ],
    excursion: true,
  },
  {
    name: 'Antwerp: Noorderlaan warehouse to Luchtbal customer',
    origin: { name: 'Noorderlaan warehouse', kind: 'Warehouse', lat: 51.2601, lng: 4.4043, radiusMeters: 150 },
    destination: { name: 'Luchtbal customer', kind: 'Customer', lat: 51.2481, lng: 4.4293, radiusMeters: 120 },
    route: [
      [51.2601, 4.4043],
      [51.2586, 4.409],
      [51.2567, 4.4141],
      [51.2545, 4.4188],
      [51.252, 4.4235],
      [51.2498, 4.4268],
      [51.2481, 4.4293],
    ],
    excursion: false,
  },
  {
    name: 'Hamburg: Speicherstadt warehouse to Hammerbrook customer',
    origin: { name: 'Speicherstadt warehouse', kind: 'Warehouse', lat: 53.5443, lng: 9.9866, radiusMeters: 120 },
    destination: { name: 'Hammerbrook customer', kind: 'Customer', lat: 53.546, lng: 10.012, radiusMeters: 120 },
    route: [
      [53.5443, 9.9866],
      [53.5449, 9.992],
      [53.5452, 9.9975],
      [53.545, 10.003],
      [53.5455, 10.0075],
      [53.546, 10.012],
    ],
    excursion: false,
  },
];

export interface TripState {
  lat: number;
  lng: number;
  temperatureC: number;
  /** Metres along the route, and the route's length. */
  travelledMeters: number;
  routeMeters: number;
  /** Ground speed, and the heading of the road at that point (degrees clockwise from north). */
  speedMps: number;
  headingDegrees: number;
  phase: 'atOrigin' | 'driving' | 'atDestination';
}

/** Where the truck is and how cold its load is at simulated second `t` (clamped to the trip). */
export function tripStateAt(trip: TripPlan, t: number): TripState {
  const legs = legsOf(trip.route);
  const routeMeters = legs.reduce((sum, leg) => sum + leg.meters, 0);
  const driveStart = PHASES.atOrigin;
  const driveEnd = driveStart + PHASES.driving;
  const phase = t < driveStart ? 'atOrigin' : t < driveEnd ? 'driving' : 'atDestination';
  // Smooth start and stop (half a sine of acceleration), constant speed between.
  const angle = (Math.PI * (t - driveStart)) / PHASES.driving;
  const progress = phase === 'atOrigin' ? 0 : phase === 'atDestination' ? 1 : (1 - Math.cos(angle)) / 2;
  const travelledMeters = progress * routeMeters;
  // The derivative of the progress above, in metres per second.
  const speedMps = phase === 'driving' ? round(((routeMeters * Math.PI) / (2 * PHASES.driving)) * Math.sin(angle), 2) : 0;
  const [lat, lng, leg] = pointAlong(legs, travelledMeters);
  return { lat, lng, temperatureC: temperatureAt(trip, t), travelledMeters, routeMeters, speedMps, headingDegrees: Math.round(bearingDegrees(leg.from, leg.to)), phase };
}

function temperatureAt(trip: TripPlan, t: number): number {
  // A fridge's slow wave around its set point.
  const wave = BASE_TEMPERATURE_C + 0.6 * Math.sin(t / 17);
  if (!trip.excursion || t <= EXCURSION.from || t >= EXCURSION.to) return round(wave, 1);
  // The door left ajar: up to the peak, then back down as it is closed.
  const rise = t < EXCURSION.peakAt ? (t - EXCURSION.from) / (EXCURSION.peakAt - EXCURSION.from) : (EXCURSION.to - t) / (EXCURSION.to - EXCURSION.peakAt);
  return round(wave + rise * (EXCURSION.peakC - wave), 1);
}

type Leg = { from: readonly [number, number]; to: readonly [number, number]; meters: number };

function legsOf(route: TripPlan['route']): Leg[] {
  return route.slice(1).map((to, i) => {
    const from = route[i] ?? to;
    return { from, to, meters: distanceMeters(from, to) };
  });
}

function pointAlong(legs: Leg[], meters: number): [number, number, Leg] {
  let left = meters;
  for (const [i, leg] of legs.entries()) {
    const { from, to, meters: length } = leg;
    if (left <= length || i === legs.length - 1) {
      const f = length === 0 ? 0 : Math.min(1, left / length);
      return [from[0] + (to[0] - from[0]) * f, from[1] + (to[1] - from[1]) * f, leg];
    }
    left -= length;
  }
  throw new RangeError('a route needs two points at least');
}

/** Great-circle distance (haversine), in metres. */
export function distanceMeters(a: readonly [number, number], b: readonly [number, number]): number {
  const rad = Math.PI / 180;
  const dLat = (b[0] - a[0]) * rad;
  const dLng = (b[1] - a[1]) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a[0] * rad) * Math.cos(b[0] * rad) * Math.sin(dLng / 2) ** 2;
  return 2 * 6371008.8 * Math.asin(Math.sqrt(h));
}

/** Initial great-circle bearing from `a` to `b`, 0..360 degrees clockwise from north. */
function bearingDegrees(a: readonly [number, number], b: readonly [number, number]): number {
  const rad = Math.PI / 180;
  const y = Math.sin((b[1] - a[1]) * rad) * Math.cos(b[0] * rad);
  const x = Math.cos(a[0] * rad) * Math.sin(b[0] * rad) - Math.sin(a[0] * rad) * Math.cos(b[0] * rad) * Math.cos((b[1] - a[1]) * rad);
  return ((Math.atan2(y, x) / rad) % 360 + 360) % 360;
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
