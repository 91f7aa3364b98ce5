#!/usr/bin/env node
// `npm run bench:eta` (issue 33): how good is the estimated arrival? Generates road trips on several lanes
// and feeds their readings, batch by batch as a device would deliver them, through the real engine
// (`evaluate` of @tracking/geofence, which folds the track in event time), the real estimator
// (`estimateArrival`) and the real lane statistics (`laneTripOf`, summed as the `eta_lanes` upsert sums
// them); the real publishing rule (`etaMovedEnough`) counts `shipment.eta_changed` events. It does not go
// through HTTP, NATS or PostgreSQL (the integration spec test/integration/eta.spec.ts covers that path).
// Last, the engine-side cost of the track's figures: evaluate() per reading against foldTrack() alone.
//
// Generator (seeded, BENCH_ETA_SEED, default 33): per lane, a road from origin to destination that winds
// evenly off the straight line (one bend per ~8 km, amplitude giving the lane's detour factor), a cruising speed per trip (lane speed x 0.85..1.15)
// redrawn every 10 min within ±20 %, traffic jams (on average one per hour of driving, 2 to 10 min), red
// lights on the urban (one per 4 min of driving) and regional (one per 20 min) lanes (20 to 90 s),
// on lanes over 4 h a 45 min break after each 4.5 h of driving, a depot dwell of 15 to 60 min inside the
// origin before leaving, one fix per minute with 15 m GPS jitter (σ), coverage gaps (2 % of the minutes
// start a gap of 5 to 30 min during which the device buffers its fixes and sends them all when it is back:
// readings arriving late, in the device's own order), and one batch sent per minute otherwise.
// BENCH_ETA_DEBUG=1 also prints the median signed errors per lane and share.
// BENCH_ETA_ORACLE=1 adds, on the lanes under 200 km, the error floor the generator leaves to any estimator:
// at half-trip an oracle that knows what no estimator can (the exact road still to drive, the trip's own
// speed factor, the current speed draw and its time left, a stop going on) replays the rest of the trip 300
// times with fresh draws of the future (its jams, lights, speed draws; a generator of its own, seeded from
// BENCH_ETA_SEED, so the main stream is untouched) and answers their median. Its median error over the true
// remaining time is the column "oracle % rem.".
// BENCH_ETA_HISTORY (8) trips per lane feed the lane's statistics first; then BENCH_ETA_TRIPS (40) fresh
// trips per lane are estimated at 25 %, 50 % and 75 % of their true duration (departure to arrival) from the
// readings received by then, with History (the lane's statistics) and, for comparison, Position alone.
// Baselines from the same readings: the plan (planned departure, off by N(0, 15 min), plus the lane's
// nominal duration) and "remaining straight-line distance / last reported speed" (the speed between the
// last two fixes, at least 1 m/s).
import { distanceMeters, estimateArrival, etaMovedEnough, evaluate, foldTrack, laneTripOf, PlaceIndex } from '@tracking/geofence';
import { loadavg } from 'node:os';
import { machine, print, table, writeResults } from './lib/report.mjs';

const int = (name, fallback) => Number(process.env[name] ?? fallback);
const settings = {
  seed: int('BENCH_ETA_SEED', 33),
  oracle: process.env.BENCH_ETA_ORACLE === '1',
  historyTrips: int('BENCH_ETA_HISTORY', 8),
  trips: int('BENCH_ETA_TRIPS', 40),
  fixSeconds: 60,
  jitterMeters: 15,
  gapStartShare: 0.02,
  radiusMeters: 500,
};

/** The lanes: straight-line length, detour of the road, speed in km/h. */
const LANES = [
  { name: 'urban 25 km', km: 25, detour: 1.35, kmh: 38, lightsEveryMin: 4 },
  { name: 'regional 120 km', km: 120, detour: 1.22, kmh: 62, lightsEveryMin: 20 },
  { name: 'long 350 km', km: 350, detour: 1.18, kmh: 72, lightsEveryMin: 0 },
  { name: 'long haul 800 km', km: 800, detour: 1.15, kmh: 75, lightsEveryMin: 0 },
];

/** mulberry32: a seeded generator so that runs compare. */
function generator(start) {
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
/** The oracle's own draws of the future (BENCH_ETA_ORACLE), apart from the trips' stream. */
const oracleRandom = generator(settings.seed ^ 0x5eed);
const uniform = (a, b) => a + (b - a) * random();
const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());

const M_PER_DEG = 111_195;

/** A lane's geometry: origin at (45, 5), destination east of it; the road is a polyline bending off the line. */
function laneGeometry(lane, index) {
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

/** One trip in event time: the fixes (with the time each is received), its true departure and arrival. */
function simulateTrip(lane, geometry, start) {
  const fixes = [];
  /** Per second (BENCH_ETA_ORACLE): road position, current speed draw, seconds to the next draw, driving since the break, stop left. */
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
    }
    if (settings.oracle) seconds.push([position, current, nextRedraw - t, drivingSinceBreak, Math.max(0, stopUntil - t)]);
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

/**
 * The oracle's answer (BENCH_ETA_ORACLE) at `at` (ms) of `trip`: the median over 300 replays of the rest of
 * the trip from its true state then, with the generator's rules and fresh draws of the future.
 */
function oracleArrival(lane, trip, at) {
  const second = Math.round((at - trip.start) / 1000);
  const arrivalSecond = Math.round((trip.arrival - trip.start) / 1000);
  const [position, current0, redraw0, driving0, stop0] = trip.seconds[second];
  const road = trip.seconds[arrivalSecond][0] - position;
  const replays = [];
  for (let k = 0; k < 300; k++) {
    let current = current0;
    let redraw = redraw0;
    let driving = driving0;
    let stopLeft = stop0;
    let done = 0;
    let t = 0;
    while (done < road) {
      let moving = stopLeft <= 0;
      if (moving) {
        if (trip.longLane && driving >= 4.5 * 3600) {
          stopLeft = 45 * 60;
          driving = 0;
          moving = false;
        } else if (oracleRandom() < 1 / (60 * 60)) {
          stopLeft = 120 + 480 * oracleRandom();
          moving = false;
        } else if (lane.lightsEveryMin > 0 && oracleRandom() < 1 / (lane.lightsEveryMin * 60)) {
          stopLeft = 20 + 70 * oracleRandom();
          moving = false;
        }
      }
      if (redraw <= 0) {
        current = trip.speedFactor * (0.8 + 0.4 * oracleRandom());
        redraw = 600;
      }
      if (moving) {
        done += (lane.kmh / 3.6) * current;
        driving++;
      } else stopLeft--;
      redraw--;
      t++;
    }
    replays.push(t);
  }
  return trip.start + (second + medianOf(replays)) * 1000;
}

const laneStats = () => ({ n: 0, detour: [0, 0], speed: [0, 0], stopRatio: [0, 0], pace: [0, 0] });
function addTrip(stats, trip) {
  stats.n++;
  for (const key of ['detour', 'speed', 'stopRatio', 'pace']) {
    stats[key][0] += trip[key];
    stats[key][1] += trip[key] * trip[key];
  }
}

function reading(fix) {
  return { deviceId: 'device', recordedAt: fix.t, receivedAt: fix.received, location: { lat: fix.lat, lng: fix.lng, accuracyMeters: 10 } };
}

/** Feeds the trip's fixes through the engine by receipt time; calls `at(now, state, received)` at each delivery. */
function drive(trip, places, at) {
  const byReceipt = new Map();
  for (const fix of trip.fixes) {
    const list = byReceipt.get(fix.received) ?? [];
    list.push(fix);
    byReceipt.set(fix.received, list);
  }
  let state = null;
  const received = [];
  for (const now of [...byReceipt.keys()].sort((a, b) => a - b)) {
    const batch = byReceipt.get(now);
    received.push(...batch);
    state = evaluate(state, batch.map(reading), { places, conditions: null, status: 'InTransit', latenessSeconds: 60, now }).state;
    at(now, state, received);
  }
  return state;
}

const medianOf = (values) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const minutes = (ms) => Math.round((ms / 60_000) * 10) / 10;

const results = [];
let estimateCalls = 0;
let estimateNs = 0n;
for (const [index, lane] of LANES.entries()) {
  const geometry = laneGeometry(lane, index);
  const places = new PlaceIndex([geometry.origin, geometry.destination]);
  const stats = laneStats();
  const nominal = (geometry.length / (lane.kmh / 3.6)) * 1000 * 1.08 + (geometry.length / (lane.kmh / 3.6) > 4 * 3600 ? Math.floor(geometry.length / (lane.kmh / 3.6) / (4.5 * 3600)) * 45 * 60_000 : 0);
  let start = Date.UTC(2026, 0, 5, 6);
  for (let i = 0; i < settings.historyTrips; i++) {
    const trip = simulateTrip(lane, geometry, start);
    const state = drive(trip, places, () => {});
    const added = laneTripOf(state.track, geometry.origin, geometry.destination, trip.departure, trip.arrival);
    if (added) addTrip(stats, added);
    start += 2 * 86_400_000;
  }
  const rows = { oracle50: [], history: { 25: [], 50: [], 75: [], rel50: [] }, position: { 25: [], 50: [], 75: [], rel50: [] }, plan: { 25: [], 50: [], 75: [] }, speed: { 25: [], 50: [], 75: [] } };
  let inside = 0;
  let estimates = 0;
  let insidePosition = 0;
  let events = 0;
  for (let i = 0; i < settings.trips; i++) {
    const trip = simulateTrip(lane, geometry, start);
    start += 2 * 86_400_000;
    const planned = trip.departure + normal() * 15 * 60_000 + nominal;
    const duration = trip.arrival - trip.departure;
    const checkpoints = [25, 50, 75].map((share) => ({ share, at: trip.departure + (duration * share) / 100, done: false }));
    let published = planned;
    let last = null;
    drive(trip, places, (now, state, received) => {
      const input = { destination: geometry.destination, origin: geometry.origin, plannedArrivalAt: planned, track: state.track, lane: stats };
      const began = process.hrtime.bigint();
      const history = estimateArrival(input);
      estimateNs += process.hrtime.bigint() - began;
      estimateCalls++;
      if (now < trip.arrival && history && history.basis !== 'Planned') {
        if (etaMovedEnough(published, history)) {
          events++;
          published = history.arrivalAt;
        }
      }
      last = { now, state, received, history };
      for (const checkpoint of checkpoints) {
        if (checkpoint.done || now < checkpoint.at) continue;
        checkpoint.done = true;
        const position = estimateArrival({ ...input, lane: null });
        const remaining = trip.arrival - now;
        rows.history[checkpoint.share].push(Math.abs(history.arrivalAt - trip.arrival));
        if (process.env.BENCH_ETA_DEBUG) (rows.signed ??= []).push([checkpoint.share, minutes(history.arrivalAt - trip.arrival), minutes(position.arrivalAt - trip.arrival), minutes(remaining), minutes(history.latestAt - history.earliestAt)]);
        rows.position[checkpoint.share].push(Math.abs(position.arrivalAt - trip.arrival));
        if (checkpoint.share === 50 && settings.oracle && lane.km < 200 && history.asOf !== null) {
          rows.oracle50.push(Math.abs(oracleArrival(lane, trip, history.asOf) - trip.arrival) / (trip.arrival - history.asOf));
        }
        if (checkpoint.share === 50) {
          rows.history.rel50.push(Math.abs(history.arrivalAt - trip.arrival) / remaining);
          rows.position.rel50.push(Math.abs(position.arrivalAt - trip.arrival) / remaining);
        }
        rows.plan[checkpoint.share].push(Math.abs(planned - trip.arrival));
        const [a, b] = received.slice(-2);
        const speed = Math.max(1, (distanceMeters(a.lat, a.lng, b.lat, b.lng) / Math.max(1, b.t - a.t)) * 1000);
        const straight = Math.max(0, distanceMeters(b.lat, b.lng, geometry.destination.lat, geometry.destination.lng) - geometry.destination.radiusMeters);
        rows.speed[checkpoint.share].push(Math.abs(b.t + (straight / speed) * 1000 - trip.arrival));
        estimates++;
        if (history.earliestAt <= trip.arrival && trip.arrival <= history.latestAt) inside++;
        if (position.earliestAt <= trip.arrival && trip.arrival <= position.latestAt) insidePosition++;
      }
    });
    void last;
    const added = laneTripOf(last.state.track, geometry.origin, geometry.destination, trip.departure, trip.arrival);
    if (added) addTrip(stats, added);
  }
  if (process.env.BENCH_ETA_DEBUG) {
    for (const share of [25, 50, 75]) {
      const mine = rows.signed.filter((r) => r[0] === share);
      print(`${lane.name} ${share} %: median signed History ${medianOf(mine.map((r) => r[1]))} Position ${medianOf(mine.map((r) => r[2]))} remaining ${medianOf(mine.map((r) => r[3]))}`);
    }
  }
  results.push({
    lane: lane.name,
    trueDurationMin: null,
    history: { 25: minutes(medianOf(rows.history[25])), 50: minutes(medianOf(rows.history[50])), 75: minutes(medianOf(rows.history[75])) },
    history50OfRemaining: Math.round(medianOf(rows.history.rel50) * 1000) / 10,
    position: { 25: minutes(medianOf(rows.position[25])), 50: minutes(medianOf(rows.position[50])), 75: minutes(medianOf(rows.position[75])) },
    oracle50OfRemaining: rows.oracle50.length ? Math.round(medianOf(rows.oracle50) * 1000) / 10 : null,
    position50OfRemaining: Math.round(medianOf(rows.position.rel50) * 1000) / 10,
    plan: { 25: minutes(medianOf(rows.plan[25])), 50: minutes(medianOf(rows.plan[50])), 75: minutes(medianOf(rows.plan[75])) },
    speed: { 25: minutes(medianOf(rows.speed[25])), 50: minutes(medianOf(rows.speed[50])), 75: minutes(medianOf(rows.speed[75])) },
    insideRange: Math.round((inside / estimates) * 1000) / 10,
    insideRangePosition: Math.round((insidePosition / estimates) * 1000) / 10,
    eventsPerTrip: Math.round((events / settings.trips) * 10) / 10,
    beatsBaselinesAtHalf: medianOf(rows.history[50]) < medianOf(rows.plan[50]) && medianOf(rows.history[50]) < medianOf(rows.speed[50]),
  });
}

const info = machine();
print(`bench:eta  seed ${settings.seed}, ${settings.historyTrips} history + ${settings.trips} estimated trips per lane; load average ${info.loadAverageAtStart.join(' ')}`);
print('Median |arrivalAt - true arrival| in minutes at 25 / 50 / 75 % of the trip; "% rem." = median error at half-trip over the true remaining time.');
print(
  table(
    ['lane', 'History 25/50/75', '% rem.', ...(settings.oracle ? ['oracle % rem.'] : []), 'Position 25/50/75', '% rem.', 'plan 25/50/75', 'dist/speed 25/50/75', 'in range H / P', 'eta_changed/trip', 'beats both at 50 %'],
    results.map((r) => [
      r.lane,
      `${r.history[25]} / ${r.history[50]} / ${r.history[75]}`,
      `${r.history50OfRemaining} %`,
      ...(settings.oracle ? [r.oracle50OfRemaining === null ? '-' : `${r.oracle50OfRemaining} %`] : []),
      `${r.position[25]} / ${r.position[50]} / ${r.position[75]}`,
      `${r.position50OfRemaining} %`,
      `${r.plan[25]} / ${r.plan[50]} / ${r.plan[75]}`,
      `${r.speed[25]} / ${r.speed[50]} / ${r.speed[75]}`,
      `${r.insideRange} % / ${r.insideRangePosition} %`,
      String(r.eventsPerTrip),
      r.beatsBaselinesAtHalf ? 'yes' : 'NO',
    ]),
  ),
);
print(`estimateArrival: ${estimateCalls} calls, ${(Number(estimateNs) / estimateCalls / 1000).toFixed(2)} µs each`);

// The engine-side cost: the engine's evaluate() per reading (the track's fold included) against foldTrack()
// alone on the same positions: 1000 shipments, 30 batches of 10 readings each, as bench:evaluation's trackers.
function engineCost() {
  const grid = new PlaceIndex(Array.from({ length: 2000 }, (_, i) => ({ id: `p${i}`, lat: 43 + (i % 50) * 0.2, lng: -1 + Math.floor(i / 50) * 0.3, radiusMeters: 200, dwellSeconds: 30 })));
  const shipments = 1000;
  const states = new Array(shipments).fill(null);
  const positions = [];
  const t0 = Date.UTC(2026, 0, 1);
  let engineNs = 0n;
  for (let b = 0; b < 30; b++) {
    for (let s = 0; s < shipments; s++) {
      const readings = [];
      for (let r = 0; r < 10; r++) {
        const sec = b * 10 + r;
        const lat = 43 + (s % 50) * 0.2 + (sec % 200 < 100 ? 0.05 : 0);
        const lng = -1 + Math.floor(s / 50) * 0.3 + sec * 0.0002;
        readings.push({ deviceId: `d${s}`, recordedAt: t0 + sec * 1000, receivedAt: t0 + sec * 1000 + 500, location: { lat, lng, accuracyMeters: 10 }, temperatureC: 4 });
        positions.push({ s, t: t0 + sec * 1000, lat, lng });
      }
      const began = process.hrtime.bigint();
      states[s] = evaluate(states[s], readings, { places: grid, conditions: null, status: 'InTransit', latenessSeconds: 60, now: t0 + (b + 1) * 10_000 }).state;
      engineNs += process.hrtime.bigint() - began;
    }
  }
  const tracks = new Array(shipments);
  const began = process.hrtime.bigint();
  for (const p of positions) tracks[p.s] = foldTrack(tracks[p.s], p.t, p.lat, p.lng, 10);
  const foldNs = process.hrtime.bigint() - began;
  return { readings: positions.length, evaluateMicros: Number(engineNs) / positions.length / 1000, foldMicros: Number(foldNs) / positions.length / 1000 };
}
const cost = engineCost();
print(
  `engine: evaluate ${cost.evaluateMicros.toFixed(2)} µs per reading (the track's fold included), foldTrack alone ${cost.foldMicros.toFixed(2)} µs ` +
    `(${((cost.foldMicros / cost.evaluateMicros) * 100).toFixed(1)} %), ${cost.readings} readings; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`,
);
const file = writeResults('eta.json', { machine: info, settings, lanes: LANES, results, estimateMicros: Number(estimateNs) / estimateCalls / 1000, engine: cost });
print(`results: ${file}`);
