// The trips of `npm run bench:eta` and `npm run bench:eta-stack` (issue 33): one seeded generator, so that
// the in-process run (bench/eta.mjs) and the run through the stack (bench/eta-stack.mjs) estimate the same
// trips for the same BENCH_ETA_SEED, and one way of scoring them (the baselines, the medians, the table).
//
// Generator (seeded, BENCH_ETA_SEED, default 33): per lane, a road from origin to destination that winds
// evenly off the straight line (one bend per ~8 km, amplitude giving the lane's detour factor), a cruising speed per trip (lane speed x 0.85..1.15)
// redrawn every 10 min within ±20 %, traffic jams (on average one per hour of driving, 2 to 10 min), red
// lights on the urban (one per 4 min of driving) and regional (one per 20 min) lanes (20 to 90 s),
// on lanes over 4 h a 45 min break after each 4.5 h of driving, a depot dwell of 15 to 60 min inside the
// origin before leaving, one fix per minute with 15 m GPS jitter (σ), coverage gaps (2 % of the minutes
// start a gap of 5 to 30 min during which the device buffers its fixes and sends them all when it is back:
// readings arriving late, in the device's own order), and one batch sent per minute otherwise.
// BENCH_ETA_HISTORY (8) trips per lane feed the lane's statistics first; then BENCH_ETA_TRIPS (40) fresh
// trips per lane are estimated at 25 %, 50 % and 75 % of their true duration (departure to arrival) from the
// readings received by then.
// Baselines from the same readings: the plan (planned departure, off by N(0, 15 min), plus the lane's
// nominal duration) and "remaining straight-line distance / last reported speed" (the speed between the
// last two fixes, at least 1 m/s).
import { distanceMeters } from '@tracking/geofence';
import { table } from './report.mjs';

const int = (name, fallback) => Number(process.env[name] ?? fallback);
export const settings = {
  seed: int('BENCH_ETA_SEED', 33),
  historyTrips: int('BENCH_ETA_HISTORY', 8),
  trips: int('BENCH_ETA_TRIPS', 40),
  fixSeconds: 60,
  jitterMeters: 15,
  gapStartShare: 0.02,
  radiusMeters: 500,
};

/** The lanes: straight-line length, detour of the road, speed in km/h. */
export const LANES = [
  { name: 'urban 25 km', km: 25, detour: 1.35, kmh: 38, lightsEveryMin: 4 },
  { name: 'regional 120 km', km: 120, detour: 1.22, kmh: 62, lightsEveryMin: 20 },
  { name: 'long 350 km', km: 350, detour: 1.18, kmh: 72, lightsEveryMin: 0 },
  { name: 'long haul 800 km', km: 800, detour: 1.15, kmh: 75, lightsEveryMin: 0 },
];

/** The checkpoints of a fresh trip, in % of its true duration. */
export const SHARES = [25, 50, 75];

/** mulberry32: a seeded generator so that runs compare. */
export function generator(start) {
  let seed = start;
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = generator(settings.seed);
const uniform = (a, b) => a + (b - a) * random();
const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());

export const M_PER_DEG = 111_195;

/** A lane's geometry: origin at (45, 5), destination east of it; the road is a polyline bending off the line. */
export function laneGeometry(lane, index) {
  const origin = { id: `o${index}`, lat: 45 + index * 0.5, lng: 5, radiusMeters: settings.radiusMeters, dwellSeconds: 60 };
  const lngSpan = (lane.km * 1000) / (M_PER_DEG * Math.cos((origin.lat * Math.PI) / 180));
  const destination = { id: `d${index}`, lat: origin.lat, lng: origin.lng + lngSpan, radiusMeters: settings.radiusMeters, dwellSeconds: 60 };
  // A sine bend whose amplitude gives the lane's detour factor (found by bisection on the polyline's length).
  const pointsOf = (amplitude) => {
    const points = [];
    const n = Math.max(400, lane.km * 8);
    for (let i = 0; i <= n; i++) {
      const f = i / n;
      // An even winding, one bend per ~8 km (the estimate assumes the lane's detour is even along it).
      const off = amplitude * Math.sin(f * Math.PI * 2 * Math.max(2, Math.round(lane.km / 8)));
      points.push({ lat: origin.lat + off / M_PER_DEG, lng: origin.lng + f * lngSpan });
    }
    return points;
  };
  const lengthOf = (points) => points.slice(1).reduce((sum, p, i) => sum + distanceMeters(points[i].lat, points[i].lng, p.lat, p.lng), 0);
  let lo = 0;
  let hi = lane.km * 1000;
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2;
    if (lengthOf(pointsOf(mid)) / (lane.km * 1000) < lane.detour) lo = mid;
    else hi = mid;
  }
  const road = pointsOf(lo);
  const cumulative = [0];
  for (let i = 1; i < road.length; i++) cumulative.push(cumulative[i - 1] + distanceMeters(road[i - 1].lat, road[i - 1].lng, road[i].lat, road[i].lng));
  return { origin, destination, road, cumulative, length: cumulative[cumulative.length - 1] };
}

function pointAt(geometry, meters) {
  const { road, cumulative } = geometry;
  let i = 1;
  while (i < cumulative.length - 1 && cumulative[i] < meters) i++;
  const f = Math.min(1, Math.max(0, (meters - cumulative[i - 1]) / (cumulative[i] - cumulative[i - 1])));
  return { lat: road[i - 1].lat + f * (road[i].lat - road[i - 1].lat), lng: road[i - 1].lng + f * (road[i].lng - road[i - 1].lng) };
}

/**
 * One trip in event time: the fixes (with the time each is received), its true departure and arrival.
 * With `perSecond` (the oracle of bench/eta.mjs) it also keeps, per second, the road position, the current
 * speed draw, the seconds to the next draw, the driving since the break and the stop left.
 */
export function simulateTrip(lane, geometry, start, { perSecond = false } = {}) {
  const fixes = [];
  const seconds = [];
  const dwell = uniform(15, 60) * 60;
  const longLane = (geometry.length / (lane.kmh / 3.6)) > 4 * 3600;
  let t = 0;
  let position = 0;
  let speedFactor = uniform(0.85, 1.15);
  let current = speedFactor * uniform(0.8, 1.2);
  let nextRedraw = 600;
  let drivingSinceBreak = 0;
  let stopUntil = -1;
  let departure = null;
  let arrival = null;
  const dest = geometry.destination;
  const inside = (p, place) => distanceMeters(p.lat, p.lng, place.lat, place.lng) <= place.radiusMeters;
  /** Where an arrived truck stands: 50 m inside the destination's circle, more than 3 σ of jitter. */
  const yard = { ...dest, radiusMeters: dest.radiusMeters - 50 };
  // Per second of event time; a fix every fixSeconds.
  while (arrival === null || t < arrival + 600) {
    let moving = t >= dwell && arrival === null && t >= stopUntil;
    if (moving) {
      if (longLane && drivingSinceBreak >= 4.5 * 3600) {
        stopUntil = t + 45 * 60;
        drivingSinceBreak = 0;
        moving = false;
      } else if (random() < 1 / (60 * 60)) {
        // A traffic jam or a queue: 2 to 10 min.
        stopUntil = t + uniform(120, 600);
        moving = false;
      } else if (lane.lightsEveryMin > 0 && random() < 1 / (lane.lightsEveryMin * 60)) {
        // A red light or a junction: 20 to 90 s.
        stopUntil = t + uniform(20, 90);
        moving = false;
      }
    }
    if (t >= nextRedraw) {
      current = speedFactor * uniform(0.8, 1.2);
      nextRedraw = t + 600;
    }
    if (moving) {
      position = Math.min(geometry.length, position + (lane.kmh / 3.6) * current);
      drivingSinceBreak++;
    } else if (arrival !== null && !inside(pointAt(geometry, position), yard)) {
      // Arrived, the truck drives on into the yard and stands there. Standing at the circle's edge, a fix
      // would be inside or not by the jitter alone: through the stack 2 of 32 trips (seed 33) were never
      // delivered that way. No draws here, so the stream (and every other trip) stays as it was.
      position = Math.min(geometry.length, position + (lane.kmh / 3.6) * current);
    }
    if (perSecond) seconds.push([position, current, nextRedraw - t, drivingSinceBreak, Math.max(0, stopUntil - t)]);
    const p = pointAt(geometry, position);
    if (departure === null && !inside(p, geometry.origin)) departure = t;
    if (arrival === null && departure !== null && inside(p, dest)) arrival = t;
    if (t % settings.fixSeconds === 0) {
      const jitter = { lat: p.lat + (normal() * settings.jitterMeters) / M_PER_DEG, lng: p.lng + (normal() * settings.jitterMeters) / (M_PER_DEG * Math.cos((p.lat * Math.PI) / 180)) };
      fixes.push({ t: start + t * 1000, ...jitter });
    }
    t++;
  }
  // Delivery: a batch per minute, or everything buffered during a coverage gap at its end.
  let gapUntil = -Infinity;
  for (const fix of fixes) {
    if (fix.t >= gapUntil && random() < settings.gapStartShare) gapUntil = fix.t + uniform(5, 30) * 60_000;
    fix.received = fix.t < gapUntil ? gapUntil : fix.t + 2000;
  }
  return { fixes, departure: start + departure * 1000, arrival: start + arrival * 1000, dwell, seconds, speedFactor, start, longLane };
}

/** The lane's nominal duration (the plan's): its road at the lane's speed plus 8 %, and its breaks. */
function nominalDuration(lane, geometry) {
  const driving = geometry.length / (lane.kmh / 3.6);
  return driving * 1000 * 1.08 + (driving > 4 * 3600 ? Math.floor(driving / (4.5 * 3600)) * 45 * 60_000 : 0);
}

/**
 * The trips of one lane, drawn from the one seeded stream in a fixed order (the history trips, then each
 * fresh trip and its plan), so both modes get the same trips when they ask for the lanes in order. Trip
 * `i` starts at `firstStart + i * 2 days` in event time (history first); a mode that needs other times
 * shifts them with `shiftTrip`.
 */
export function laneTrips(lane, index, { firstStart = Date.UTC(2026, 0, 5, 6), perSecond = false } = {}) {
  const geometry = laneGeometry(lane, index);
  const nominal = nominalDuration(lane, geometry);
  let start = firstStart;
  const history = [];
  for (let i = 0; i < settings.historyTrips; i++) {
    history.push(simulateTrip(lane, geometry, start, { perSecond }));
    start += 2 * 86_400_000;
  }
  const fresh = [];
  for (let i = 0; i < settings.trips; i++) {
    const trip = simulateTrip(lane, geometry, start, { perSecond });
    start += 2 * 86_400_000;
    trip.planned = trip.departure + normal() * 15 * 60_000 + nominal;
    trip.index = i;
    fresh.push(trip);
  }
  return { lane, geometry, history, fresh };
}

/** The trip moved in event time by `ms` (its fixes, receipts, departure, arrival and plan). */
export function shiftTrip(trip, ms) {
  const moved = { ...trip, start: trip.start + ms, departure: trip.departure + ms, arrival: trip.arrival + ms };
  if (trip.planned !== undefined) moved.planned = trip.planned + ms;
  moved.fixes = trip.fixes.map((fix) => ({ ...fix, t: fix.t + ms, received: fix.received + ms }));
  return moved;
}

/** The trip's fixes grouped by the moment they are received, in that order: the device's batches. */
export function batchesOf(trip) {
  const byReceipt = new Map();
  for (const fix of trip.fixes) {
    const list = byReceipt.get(fix.received) ?? [];
    list.push(fix);
    byReceipt.set(fix.received, list);
  }
  return [...byReceipt.keys()].sort((a, b) => a - b).map((received) => ({ received, fixes: byReceipt.get(received) }));
}

/** The checkpoints of a fresh trip: 25, 50, 75 % of its true duration, departure to arrival. */
export function checkpointsOf(trip) {
  const duration = trip.arrival - trip.departure;
  return SHARES.map((share) => ({ share, at: trip.departure + (duration * share) / 100, done: false }));
}

/** "Remaining straight-line distance / last reported speed" from the fixes received so far: its arrival. */
export function speedBaseline(received, destination) {
  const [a, b] = received.slice(-2);
  const speed = Math.max(1, (distanceMeters(a.lat, a.lng, b.lat, b.lng) / Math.max(1, b.t - a.t)) * 1000);
  const straight = Math.max(0, distanceMeters(b.lat, b.lng, destination.lat, destination.lng) - destination.radiusMeters);
  return b.t + (straight / speed) * 1000;
}

export const medianOf = (values) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
export const minutes = (ms) => Math.round((ms / 60_000) * 10) / 10;

/** A lane's scores, filled checkpoint by checkpoint with `score`. */
export function laneScores() {
  const shares = () => Object.fromEntries(SHARES.map((share) => [share, []]));
  return { history: { ...shares(), rel50: [] }, plan: shares(), speed: shares(), estimates: 0, inside: 0, bases: {}, records: [] };
}

/**
 * Scores one estimate (`{arrivalAt, earliestAt, latestAt, basis}`) made at checkpoint `share` of `trip`,
 * `now` being the receipt time of the last batch it saw, `received` the fixes received by then.
 */
export function score(scores, { trip, share, now, received, destination, estimate }) {
  const error = Math.abs(estimate.arrivalAt - trip.arrival);
  scores.history[share].push(error);
  if (share === 50) scores.history.rel50.push(error / (trip.arrival - now));
  scores.plan[share].push(Math.abs(trip.planned - trip.arrival));
  scores.speed[share].push(Math.abs(speedBaseline(received, destination) - trip.arrival));
  scores.estimates++;
  if (estimate.earliestAt <= trip.arrival && trip.arrival <= estimate.latestAt) scores.inside++;
  scores.bases[estimate.basis] = (scores.bases[estimate.basis] ?? 0) + 1;
  // Each estimate against the truth, in minutes, so that two runs of the same trips compare estimate by estimate.
  scores.records.push({
    trip: trip.index,
    share,
    basis: estimate.basis,
    error: minutes(estimate.arrivalAt - trip.arrival),
    early: minutes(trip.arrival - estimate.earliestAt),
    late: minutes(estimate.latestAt - trip.arrival),
  });
}

/** The medians of a lane's scores, in minutes; `events` is the count of `shipment.eta_changed` over its fresh trips. */
export function summarize(lane, scores, events) {
  const mins = (values) => Object.fromEntries(SHARES.map((share) => [share, minutes(medianOf(values[share]))]));
  return {
    lane: lane.name,
    history: mins(scores.history),
    history50OfRemaining: Math.round(medianOf(scores.history.rel50) * 1000) / 10,
    plan: mins(scores.plan),
    speed: mins(scores.speed),
    insideRange: Math.round((scores.inside / scores.estimates) * 1000) / 10,
    bases: scores.bases,
    records: scores.records,
    eventsPerTrip: Math.round((events / settings.trips) * 10) / 10,
    beatsBaselinesAtHalf: medianOf(scores.history[50]) < medianOf(scores.plan[50]) && medianOf(scores.history[50]) < medianOf(scores.speed[50]),
  };
}

const triple = (values) => `${values[25]} / ${values[50]} / ${values[75]}`;

/**
 * The table both modes print: `extra` adds columns after the estimate's ({ header, cell(result) }), such as
 * the in-process mode's Position and oracle.
 */
export function etaTable(results, extra = []) {
  return table(
    ['lane', 'estimate 25/50/75', '% rem.', ...extra.map((column) => column.header), 'plan 25/50/75', 'dist/speed 25/50/75', 'in range', 'bases', 'eta_changed/trip', 'beats both at 50 %'],
    results.map((r) => [
      r.lane,
      triple(r.history),
      `${r.history50OfRemaining} %`,
      ...extra.map((column) => column.cell(r)),
      triple(r.plan),
      triple(r.speed),
      `${r.insideRange} %`,
      Object.entries(r.bases).map(([basis, count]) => `${basis} ${count}`).join(', '),
      String(r.eventsPerTrip),
      r.beatsBaselinesAtHalf ? 'yes' : 'NO',
    ]),
  );
}
