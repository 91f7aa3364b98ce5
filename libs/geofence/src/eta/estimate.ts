import { distanceMeters } from '../geo.js';
import { BREAK_MIN_MS, type TrackStats } from './track.js';

export type EtaBasis = 'Planned' | 'Position' | 'History';

/** An estimated arrival (times in epoch milliseconds): `earliestAt <= arrivalAt <= latestAt`. */
export interface Estimate {
  arrivalAt: number;
  earliestAt: number;
  latestAt: number;
  /** Great-circle metres from the newest position to the edge of the destination's circle (times the lane's detour with History); null for Planned. */
  remainingMeters: number | null;
  basis: EtaBasis;
  /** The newest position's `recordedAt`; null for Planned. */
  asOf: number | null;
}

/** One completed trip of a lane, as its statistics take it in. */
export interface LaneTrip {
  /** Track length over the direct distance between the lane's two places. */
  detour: number;
  /** Moving distance over moving time, m/s. */
  speed: number;
  /** Time stopped per unit of moving time. */
  stopRatio: number;
  /** The trip's duration (departure to delivery) per metre of direct distance, ms/m. */
  pace: number;
}

/** Running sums of a lane's completed trips (count, sum and sum of squares of each figure): updated per trip, never recomputed. */
export interface LaneStats {
  n: number;
  detour: [sum: number, squares: number];
  speed: [sum: number, squares: number];
  stopRatio: [sum: number, squares: number];
  pace: [sum: number, squares: number];
}

/** The driving-time rules: a 45 min break after at most 4.5 h of driving (Regulation (EC) No 561/2006). */
const DRIVING_BEFORE_BREAK_MS = 4.5 * 3600_000;
const BREAK_MS = 45 * 60_000;

/** A lane is History from this many completed trips on. */
export const HISTORY_MIN_TRIPS = 3;

/**
 * Priors, each worth a stretch of observation, with which a young track's figures are shrunk (a truck
 * that has moved for two minutes has not shown its speed yet): a road truck's 60 km/h over 20 minutes,
 * a road detour of 1.25 over 30 km of progress, and stops of 5 % of moving time over an hour.
 */
const PRIOR_SPEED_MPS = 60 / 3.6;
const PRIOR_SPEED_MS = 5 * 60_000;
const PRIOR_DETOUR = 1.25;
const PRIOR_DETOUR_METERS = 30_000;
const PRIOR_STOP_RATIO = 0.05;
const PRIOR_STOP_MS = 60 * 60_000;
/**
 * A typical short stop (a queue, a jam, a light that held the truck a whole fix interval), shrunk toward
 * 3 min with the weight of 2 stops: the trip's own stops give it, a young trip has seen few.
 */
const PRIOR_STOP_LENGTH_MS = 3 * 60_000;
const PRIOR_STOP_COUNT = 2;
/** The History basis trusts the lane's speed as much as this much moving time of the trip itself. */
const LANE_SPEED_WEIGHT_MS = 20 * 60_000;
/** The range never shrinks below ±10 % of the remaining time (Position) and, for History, a minute either side. */
const MIN_POSITION_SPREAD = 0.1;
const MIN_RANGE_MS = 60_000;
/** Multiples of a relative standard deviation that the range spans each side (about 85 % of a normal spread). */
const SPREAD_SIGMAS = 1.5;

export interface EstimateInput {
  destination: { lat: number; lng: number; radiusMeters: number };
  /** The origin's centre, for the trip's own detour (progress made toward the destination). */
  origin: { lat: number; lng: number } | null;
  plannedArrivalAt: number | null;
  track: TrackStats | undefined;
  /** The statistics of the shipment's lane (same account, origin and destination), if any. */
  lane: LaneStats | null;
}

const mean = ([sum]: [number, number], n: number): number => sum / n;
function relativeSd([sum, squares]: [number, number], n: number): number {
  const m = sum / n;
  if (n < 2 || m <= 0) return 0;
  const variance = Math.max(0, (squares - (sum * sum) / n) / (n - 1));
  return Math.sqrt(variance) / m;
}

/**
 * The estimated arrival of a shipment (docs/eta.md): `Planned` with no position (null without a plan),
 * `Position` from the track's moving speed and stops and the remaining great-circle distance times a
 * detour factor, `History` when the lane has at least `HISTORY_MIN_TRIPS` trips. Pure and cheap: a
 * handful of arithmetic on a few numbers.
 */
export function estimateArrival(input: EstimateInput): Estimate | null {
  const { track, destination, lane, plannedArrivalAt } = input;
  // Until the truck first moves, the plan holds (a truck waiting at its depot for tomorrow's departure is not arriving today).
  if (track === undefined || (track.s === null && plannedArrivalAt !== null)) {
    if (plannedArrivalAt === null) return null;
    return { arrivalAt: plannedArrivalAt, earliestAt: plannedArrivalAt, latestAt: plannedArrivalAt, remainingMeters: null, basis: 'Planned', asOf: null };
  }
  const asOf = track.t;
  const direct = Math.max(0, distanceMeters(track.lat, track.lng, destination.lat, destination.lng) - destination.radiusMeters);
  const speed = (track.md + PRIOR_SPEED_MPS * (PRIOR_SPEED_MS / 1000)) / ((track.mv + PRIOR_SPEED_MS) / 1000);
  if (lane !== null && lane.n >= HISTORY_MIN_TRIPS) {
    const detour = Math.max(1, mean(lane.detour, lane.n));
    const laneSpeed = mean(lane.speed, lane.n);
    // The lane's speed is the prior here, in place of the general one.
    const blended = (track.md + laneSpeed * (LANE_SPEED_WEIGHT_MS / 1000)) / ((track.mv + LANE_SPEED_WEIGHT_MS) / 1000);
    const remainingMeters = direct * detour;
    const moving = (remainingMeters / blended) * 1000;
    const stops = moving * Math.max(0, mean(lane.stopRatio, lane.n));
    const skew = stopsSkew(track, stops);
    const remaining = moving + stops - skew + breaksAhead(track, moving);
    const spread = SPREAD_SIGMAS * Math.max(relativeSd(lane.pace, lane.n), relativeSd(lane.speed, lane.n) + relativeSd(lane.stopRatio, lane.n) * mean(lane.stopRatio, lane.n));
    return ranged(asOf, remaining, Math.max(0.05, spread), Math.max(0.05, spread), remainingMeters, 'History', skew);
  }
  const detour = ownDetour(track, input.origin, destination);
  const stopRatio = track.s === null ? PRIOR_STOP_RATIO : (shortStops(track) + PRIOR_STOP_RATIO * PRIOR_STOP_MS) / (track.mv + PRIOR_STOP_MS);
  const moving = ((direct * detour) / speed) * 1000;
  // No skew here (`stopsSkew`): a young track's stop share and detour are shrunk toward priors that already
  // make it early on short remainders (bench/eta.mjs, "Position", median signed error -18 % on the urban lane
  // at half-trip); taking the skew off as well made its median error 21.1 % of the remaining time against 17.9 %.
  const remaining = moving * (1 + stopRatio) + breaksAhead(track, moving);
  const speedSpread = track.mv > 0 ? speedVariation(track) : 0;
  const early = Math.max(MIN_POSITION_SPREAD, SPREAD_SIGMAS * speedSpread);
  // Stops to come only ever delay: the late side holds them once more.
  const late = Math.max(MIN_POSITION_SPREAD, SPREAD_SIGMAS * speedSpread + stopRatio);
  return ranged(asOf, remaining, early, late, direct, 'Position', 0);
}

/**
 * How far the likely time of the short stops ahead lies below their mean (`stops` ms): half a typical stop,
 * at most all of them. They are a few rare stops of uneven length, so their sum is skewed: on a 30-minute
 * remainder with one jam an hour, most trips meet none and a few meet a long one. The median of such a sum
 * (a compound Poisson) lies below its mean by about its third cumulant over six times its variance, which
 * is half the mean stop for exponential stop lengths; whatever the number of stops, so it matters on short
 * remainders and not on long ones. Measured with `BENCH_ETA_TRIPS=150` over seeds 1 to 10 (BENCHMARKS.md,
 * "Estimated arrival"): the median error at half-trip fell from 11.6 to 10.6 % of the remaining time on the
 * urban lane and from 7.3 to 7.1 % on the regional one (means over the seeds), the long lanes unchanged.
 */
function stopsSkew(track: TrackStats, stops: number): number {
  const ongoing = track.stopped && track.ss !== null ? track.t - track.ss : 0;
  // `ns` counts the stops that ended (breaks too, which only shortens the typical stop of a long trip, where half a stop is nothing against hours), a short stop going on is one more.
  const count = track.ns + (ongoing > 0 && ongoing < BREAK_MIN_MS ? 1 : 0);
  const typical = (shortStops(track) + PRIOR_STOP_LENGTH_MS * PRIOR_STOP_COUNT) / (count + PRIOR_STOP_COUNT);
  return Math.min(stops, typical / 2);
}

/** The stop time of the track but its breaks (and a break going on now): traffic, lights, queues. */
function shortStops(track: TrackStats): number {
  const ongoing = track.stopped && track.ss !== null ? track.t - track.ss : 0;
  return Math.max(0, track.st - track.lt - (ongoing >= BREAK_MIN_MS ? ongoing : 0));
}

/**
 * The breaks still to take before arriving, `moving` ms of driving ahead: what is left of a break going
 * on, and one break per 4.5 h of driving counted from the last break.
 */
function breaksAhead(track: TrackStats, moving: number): number {
  const ongoing = track.stopped && track.ss !== null ? track.t - track.ss : 0;
  if (ongoing >= BREAK_MIN_MS) return Math.max(0, BREAK_MS - ongoing) + Math.floor(moving / DRIVING_BEFORE_BREAK_MS) * BREAK_MS;
  return Math.floor((track.ds + moving) / DRIVING_BEFORE_BREAK_MS) * BREAK_MS;
}

/** The estimate `remaining` ms after `asOf`, its range `early` and `late` shares of it either side, the late side `skew` ms more (it keeps the stops' mean). */
function ranged(asOf: number, remaining: number, early: number, late: number, remainingMeters: number, basis: EtaBasis, skew: number): Estimate {
  const arrivalAt = Math.round(asOf + remaining);
  if (remaining <= 0) return { arrivalAt, earliestAt: arrivalAt, latestAt: arrivalAt, remainingMeters: 0, basis, asOf };
  const floor = basis === 'History' ? MIN_RANGE_MS : 0;
  return {
    arrivalAt,
    earliestAt: Math.round(arrivalAt - Math.max(floor, remaining * early)),
    latestAt: Math.round(arrivalAt + Math.max(floor, remaining * late) + skew),
    remainingMeters: Math.round(remainingMeters),
    basis,
    asOf,
  };
}

/** The coefficient of variation of the segment speeds over moving time. */
function speedVariation(track: TrackStats): number {
  const m = track.md / track.mv; // m per ms
  const meanSquare = track.sq / track.mv; // (m/s)^2
  const meanSpeed = m * 1000;
  const variance = Math.max(0, meanSquare - meanSpeed * meanSpeed);
  return meanSpeed > 0 ? Math.min(1, Math.sqrt(variance) / meanSpeed) : 0;
}

/** The detour of the trip so far (distance driven over progress made toward the destination), shrunk toward the prior. */
function ownDetour(track: TrackStats, origin: { lat: number; lng: number } | null, destination: { lat: number; lng: number }): number {
  const from = origin ?? (track.slat !== null && track.slng !== null ? { lat: track.slat, lng: track.slng } : null);
  if (from === null) return PRIOR_DETOUR;
  const progress = distanceMeters(from.lat, from.lng, destination.lat, destination.lng) - distanceMeters(track.lat, track.lng, destination.lat, destination.lng);
  if (progress <= 0) return PRIOR_DETOUR;
  const own = Math.min(2, Math.max(1, track.md / progress));
  return (own * progress + PRIOR_DETOUR * PRIOR_DETOUR_METERS) / (progress + PRIOR_DETOUR_METERS);
}

/**
 * What a trip delivered on a lane adds to its statistics; null when its track says too little (it never moved).
 * The detour is the track's length over the great-circle distance from the origin's centre to the edge of
 * the destination's circle: the track ends where the truck enters the circle, and the estimate multiplies
 * the detour by the distance to that edge (`remainingMeters`). Over the distance between the centres it
 * came out a radius short, and so did every History estimate (2 % on a 25 km lane with a 500 m circle:
 * bench/eta.mjs, median signed error of the remaining road).
 */
export function laneTripOf(
  track: TrackStats | undefined,
  origin: { lat: number; lng: number },
  destination: { lat: number; lng: number; radiusMeters?: number },
  departedAt: number,
  deliveredAt: number,
): LaneTrip | null {
  const centres = distanceMeters(origin.lat, origin.lng, destination.lat, destination.lng);
  const direct = centres - Math.min(destination.radiusMeters ?? 0, centres / 2);
  if (track === undefined || track.mv <= 0 || direct < 1000 || deliveredAt <= departedAt) return null;
  // The stop in the destination after the arrival (until the delivery is decided and beyond) is not the trip's.
  const trailing = track.stopped && track.ss !== null && track.t > deliveredAt ? track.t - Math.max(track.ss, deliveredAt) : 0;
  return {
    detour: Math.min(3, Math.max(1, track.md / direct)),
    speed: (track.md / track.mv) * 1000,
    // Short stops only: the breaks are the driving-time rules' (`breaksAhead`), whatever the lane.
    stopRatio: Math.max(0, track.st - trailing - track.lt) / track.mv,
    pace: (deliveredAt - departedAt) / direct,
  };
}

/** `shipment.eta_changed` is published when `arrivalAt` moves by more than max(10 min, 10 % of the new remaining time). */
export const ETA_CHANGE_MIN_MS = 10 * 60_000;
export const ETA_CHANGE_SHARE = 0.1;

/**
 * Whether moving `arrivalAt` from `previous` (the value last published; null: none) to `next`'s is worth
 * an event: always from null, else by more than max(10 min, 10 % of the new remaining time, arrivalAt - asOf).
 */
export function etaMovedEnough(previous: number | null, next: Estimate): boolean {
  if (previous === null) return true;
  const remaining = Math.max(0, next.arrivalAt - (next.asOf ?? next.arrivalAt));
  return Math.abs(next.arrivalAt - previous) > Math.max(ETA_CHANGE_MIN_MS, ETA_CHANGE_SHARE * remaining);
}
