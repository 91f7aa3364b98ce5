#!/usr/bin/env node
// `npm run bench:eta` (issue 33): how good is the estimated arrival? Generates road trips on several lanes
// and feeds their readings, batch by batch as a device would deliver them, through the real engine
// (`evaluate` of @tracking/geofence, which folds the track in event time), the real estimator
// (`estimateArrival`) and the real lane statistics (`laneTripOf` with the departure and arrival the engine
// records, summed as the `eta_lanes` upsert sums them); the real publishing rule (`etaMovedEnough`) counts
// `shipment.eta_changed` events. It does not go through HTTP, NATS or PostgreSQL: `npm run bench:eta-stack`
// does, with the same trips.
// Last, the engine-side cost of the track's figures: evaluate() per reading against foldTrack() alone.
//
// The trips and their scoring are bench/lib/eta-trips.mjs (its header: the generator's settings), shared with
// `npm run bench:eta-stack` (bench/eta-stack.mjs), which feeds the same trips through HTTP, NATS and PostgreSQL.
// BENCH_ETA_DEBUG=1 also prints the median signed errors per lane and share.
// BENCH_ETA_ORACLE=1 adds, on the lanes under 200 km, the error floor the generator leaves to any estimator:
// at half-trip an oracle that knows what no estimator can (the exact road still to drive, the trip's own
// speed factor, the current speed draw and its time left, a stop going on) replays the rest of the trip 300
// times with fresh draws of the future (its jams, lights, speed draws; a generator of its own, seeded from
// BENCH_ETA_SEED, so the main stream is untouched) and answers their median. Its median error over the true
// remaining time is the column "oracle % rem.".
// Each estimate is made with History (the lane's statistics) and, for comparison, with Position alone.
import { estimateArrival, etaMovedEnough, evaluate, foldTrack, laneTripOf, PlaceIndex } from '@tracking/geofence';
import { loadavg } from 'node:os';
import { batchesOf, checkpointsOf, generator, LANES, laneScores, laneTrips, medianOf, minutes, settings, score, summarize, etaTable } from './lib/eta-trips.mjs';
import { machine, print, writeResults } from './lib/report.mjs';

const oracle = process.env.BENCH_ETA_ORACLE === '1';
/** The oracle's own draws of the future (BENCH_ETA_ORACLE), apart from the trips' stream. */
const oracleRandom = generator(settings.seed ^ 0x5eed);

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

/**
 * Feeds the trip's batches through the engine by receipt time; calls `at(now, state, received)` at each
 * delivery. Returns the final state and the visits' times the service would record: the departure from the
 * origin (`departedAt`) and the arrival at the destination (`deliveredAt`, with autoTransitions).
 */
function drive(trip, geometry, places, at) {
  let state = null;
  const received = [];
  const recorded = { departedAt: null, deliveredAt: null };
  for (const { received: now, fixes } of batchesOf(trip)) {
    received.push(...fixes);
    const result = evaluate(state, fixes.map(reading), { places, conditions: null, status: 'InTransit', latenessSeconds: 60, now });
    state = result.state;
    for (const change of result.changes) {
      if (change.type === 'departed' && change.poiId === geometry.origin.id) recorded.departedAt ??= Date.parse(change.departedAt);
      if (change.type === 'arrived' && change.poiId === geometry.destination.id && recorded.departedAt !== null) recorded.deliveredAt ??= Date.parse(change.arrivedAt);
    }
    at(now, state, received);
  }
  return { state, ...recorded };
}

/**
 * Adds the trip to the lane as the service does once it is delivered: with the recorded departure and
 * arrival (a visit starts at the first fix inside, up to a minute or more after the true arrival), and not
 * at all when the readings never showed both.
 */
function addDriven(stats, geometry, { state, departedAt, deliveredAt }) {
  if (departedAt === null || deliveredAt === null) return;
  const added = laneTripOf(state.track, geometry.origin, geometry.destination, departedAt, deliveredAt);
  if (added) addTrip(stats, added);
}

const results = [];
let estimateCalls = 0;
let estimateNs = 0n;
for (const [index, lane] of LANES.entries()) {
  const { geometry, history, fresh } = laneTrips(lane, index, { perSecond: oracle });
  const places = new PlaceIndex([geometry.origin, geometry.destination]);
  const stats = laneStats();
  for (const trip of history) addDriven(stats, geometry, drive(trip, geometry, places, () => {}));
  const scores = laneScores();
  const position = { 25: [], 50: [], 75: [], rel50: [], inside: 0 };
  const oracle50 = [];
  const signed = [];
  let events = 0;
  for (const trip of fresh) {
    const checkpoints = checkpointsOf(trip);
    let published = trip.planned;
    const driven = drive(trip, geometry, places, (now, state, received) => {
      const input = { destination: geometry.destination, origin: geometry.origin, plannedArrivalAt: trip.planned, track: state.track, lane: stats };
      const began = process.hrtime.bigint();
      const estimate = estimateArrival(input);
      estimateNs += process.hrtime.bigint() - began;
      estimateCalls++;
      if (now < trip.arrival && estimate && estimate.basis !== 'Planned') {
        if (etaMovedEnough(published, estimate)) {
          events++;
          published = estimate.arrivalAt;
        }
      }
      for (const checkpoint of checkpoints) {
        if (checkpoint.done || now < checkpoint.at) continue;
        checkpoint.done = true;
        score(scores, { trip, share: checkpoint.share, now, received, destination: geometry.destination, estimate });
        const alone = estimateArrival({ ...input, lane: null });
        const remaining = trip.arrival - now;
        position[checkpoint.share].push(Math.abs(alone.arrivalAt - trip.arrival));
        if (checkpoint.share === 50) position.rel50.push(Math.abs(alone.arrivalAt - trip.arrival) / remaining);
        if (alone.earliestAt <= trip.arrival && trip.arrival <= alone.latestAt) position.inside++;
        if (process.env.BENCH_ETA_DEBUG) signed.push([checkpoint.share, minutes(estimate.arrivalAt - trip.arrival), minutes(alone.arrivalAt - trip.arrival), minutes(remaining), minutes(estimate.latestAt - estimate.earliestAt)]);
        if (checkpoint.share === 50 && oracle && lane.km < 200 && estimate.asOf !== null) {
          oracle50.push(Math.abs(oracleArrival(lane, trip, estimate.asOf) - trip.arrival) / (trip.arrival - estimate.asOf));
        }
      }
    });
    addDriven(stats, geometry, driven);
  }
  if (process.env.BENCH_ETA_DEBUG) {
    for (const share of [25, 50, 75]) {
      const mine = signed.filter((r) => r[0] === share);
      print(`${lane.name} ${share} %: median signed History ${medianOf(mine.map((r) => r[1]))} Position ${medianOf(mine.map((r) => r[2]))} remaining ${medianOf(mine.map((r) => r[3]))}`);
    }
  }
  results.push({
    ...summarize(lane, scores, events),
    position: { 25: minutes(medianOf(position[25])), 50: minutes(medianOf(position[50])), 75: minutes(medianOf(position[75])) },
    position50OfRemaining: Math.round(medianOf(position.rel50) * 1000) / 10,
    insideRangePosition: Math.round((position.inside / scores.estimates) * 1000) / 10,
    oracle50OfRemaining: oracle50.length ? Math.round(medianOf(oracle50) * 1000) / 10 : null,
  });
}

const info = machine();
print(`bench:eta  seed ${settings.seed}, ${settings.historyTrips} history + ${settings.trips} estimated trips per lane; load average ${info.loadAverageAtStart.join(' ')}`);
print('Median |arrivalAt - true arrival| in minutes at 25 / 50 / 75 % of the trip; "% rem." = median error at half-trip over the true remaining time.');
print('"estimate" is with the lane\'s history (History once it has 3 trips), "Position" the same track without it.');
print(
  etaTable(results, [
    ...(oracle ? [{ header: 'oracle % rem.', cell: (r) => (r.oracle50OfRemaining === null ? '-' : `${r.oracle50OfRemaining} %`) }] : []),
    { header: 'Position 25/50/75', cell: (r) => `${r.position[25]} / ${r.position[50]} / ${r.position[75]}` },
    { header: '% rem.', cell: (r) => `${r.position50OfRemaining} %` },
    { header: 'in range P', cell: (r) => `${r.insideRangePosition} %` },
  ]),
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
const file = writeResults('eta.json', { machine: info, settings: { ...settings, oracle }, lanes: LANES, results, estimateMicros: Number(estimateNs) / estimateCalls / 1000, engine: cost });
print(`results: ${file}`);
