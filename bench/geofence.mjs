#!/usr/bin/env node
// `npm run bench:geofence` (issue 22): the in-process cost of geofence evaluation on one core, no I/O.
//  1. Candidate lookups per second in an index of BENCH_GEOFENCE_PLACES (5000) points of interest spread
//     over Europe (radius 100..5000 m), for positions anywhere in that area and for positions near a
//     place, against a full scan of the same places.
//  2. Readings per second through `evaluate`, for BENCH_GEOFENCE_SHIPMENTS (1000) shipments of 2 devices
//     each, reporting every second, evaluated in batches of one second (as the reorder delay would), with
//     the lateness bound of 600 s (so each state retains about 1200 readings): the state kept in memory;
//     kept in memory and written as JSON without its retained readings on every evaluation (what a
//     service stores, `withoutPending`); and the whole state serialised and parsed again each time.
// Prints one line per figure, each the median of BENCH_RUNS (3) runs, as rates per CPU second of this
// process (user + system), so that other load on the machine does not lower them.
//   npm run -s build && node bench/geofence.mjs
import { distanceMeters, evaluate, PlaceIndex, withoutPending } from '@tracking/geofence';

const PLACES = Number(process.env.BENCH_GEOFENCE_PLACES ?? 5000);
const SHIPMENTS = Number(process.env.BENCH_GEOFENCE_SHIPMENTS ?? 1000);
const SECONDS = Number(process.env.BENCH_GEOFENCE_SECONDS ?? 900);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const LATENESS = 600;

let seed = 42;
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const between = (min, max) => min + random() * (max - min);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const places = Array.from({ length: PLACES }, (_, i) => ({
  id: `poi-${i}`,
  lat: between(36, 60),
  lng: between(-10, 30),
  radiusMeters: Math.round(between(100, 5000)),
  dwellSeconds: 120,
}));

/** CPU milliseconds of this process (user + system): robust on a machine whose cores are shared. */
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

function timeIt(fn, seconds = 1) {
  const started = cpuMs();
  let n = 0;
  while (cpuMs() - started < seconds * 1000) n += fn();
  return (n * 1000) / (cpuMs() - started);
}

const print = (name, value) => {
  console.log(`${name.padEnd(62)}  ${String(value).padStart(10)}`);
};
const buildStarted = performance.now();
const index = new PlaceIndex(places);
const buildMs = performance.now() - buildStarted;
console.log(`Geofence evaluation, ${PLACES} places (index built in ${buildMs.toFixed(1)} ms), ${SHIPMENTS} shipments x 2 devices, ${SECONDS} s of readings, node ${process.version}; rates per CPU second of this process`);

const anywhere = Array.from({ length: 10000 }, () => [between(36, 60), between(-10, 30), between(0, 50)]);
const nearPlace = Array.from({ length: 10000 }, () => {
  const p = places[Math.floor(random() * PLACES)];
  return [p.lat + between(-0.02, 0.02), p.lng + between(-0.02, 0.02), between(0, 50)];
});
for (const [name, positions] of [
  ['anywhere in the area', anywhere],
  ['near a place', nearPlace],
]) {
  const indexed = [];
  const scanned = [];
  for (let run = 0; run < RUNS; run++) {
    indexed.push(
      timeIt(() => {
        for (const [lat, lng, acc] of positions) index.candidates(lat, lng, acc);
        return positions.length;
      }),
    );
    scanned.push(
      timeIt(() => {
        for (const [lat, lng, acc] of positions.slice(0, 200)) {
          for (const p of places) if (distanceMeters(lat, lng, p.lat, p.lng) - acc <= p.radiusMeters * 1.1) break;
        }
        return 200;
      }, 0.5),
    );
  }
  print(`lookups/s, ${name} (flatbush)`, Math.round(median(indexed)));
  print(`lookups/s, ${name} (full scan)`, Math.round(median(scanned)));
}

// Shipments with two devices each, moving between places; one reading per device per second.
function shipmentPlan(s) {
  const from = places[(s * 7) % PLACES];
  const to = places[(s * 13 + 1) % PLACES];
  return { from, to, devices: [`s${s}-a`, `s${s}-b`] };
}
const plans = Array.from({ length: SHIPMENTS }, (_, s) => shipmentPlan(s));
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const conditions = { temperature: { minC: 2, maxC: 8, minDurationSeconds: 60 }, shock: { maxG: 4 }, battery: { minPercent: 15 } };

function secondOf(plan, second) {
  const f = second / SECONDS;
  const lat = plan.from.lat + (plan.to.lat - plan.from.lat) * f;
  const lng = plan.from.lng + (plan.to.lng - plan.from.lng) * f;
  const at = new Date(T0 + second * 1000).toISOString();
  return plan.devices.map((deviceId, i) => ({
    deviceId,
    recordedAt: at,
    receivedAt: at,
    location: { lat: lat + i * 1e-4, lng, accuracyMeters: 10 },
    temperatureC: 5 + Math.sin(second / 60) * 4,
    shockG: second % 97 === 0 ? 6 : 0.5,
    batteryPercent: 80,
  }));
}

function evaluationRun(mode) {
  const serialise = mode === 'whole';
  // Serialising the whole state is slow enough that a shorter run with fewer shipments shows it.
  const seconds = serialise ? Math.min(SECONDS, 120) : SECONDS;
  const shipments = serialise ? Math.min(SHIPMENTS, 100) : SHIPMENTS;
  const options = { places: index, conditions, status: 'InTransit', latenessSeconds: LATENESS };
  const states = new Array(shipments).fill(null);
  let readings = 0;
  let changes = 0;
  let elapsed = 0;
  let stateBytes = 0;
  for (let second = 0; second < seconds; second++) {
    const batches = plans.slice(0, shipments).map((plan) => secondOf(plan, second));
    const started = cpuMs();
    for (let s = 0; s < shipments; s++) {
      const previous = serialise && states[s] !== null ? JSON.parse(states[s]) : states[s];
      const result = evaluate(previous, batches[s], options);
      states[s] = serialise ? JSON.stringify(result.state) : result.state;
      if (mode === 'compact') stateBytes = JSON.stringify(withoutPending(result.state)).length;
      readings += batches[s].length;
      changes += result.changes.length;
    }
    elapsed += cpuMs() - started;
    if (second === seconds - 1 && mode !== 'compact') stateBytes = JSON.stringify(serialise ? JSON.parse(states[0]) : states[0]).length;
  }
  return { perSecond: (readings * 1000) / elapsed, changes, stateBytes, retained: (serialise ? JSON.parse(states[0]) : states[0]).pending.length };
}

const MODES = { memory: 'state in memory', compact: 'in memory, stored without readings', whole: 'whole state as JSON each time (100 shipments, 120 s)' };
for (const mode of Object.keys(MODES)) {
  const runs = [];
  let last;
  for (let run = 0; run < (mode === 'whole' ? 1 : RUNS); run++) {
    last = evaluationRun(mode);
    runs.push(last.perSecond);
  }
  const label = MODES[mode];
  print(`readings/s through evaluate, ${label}`, Math.round(median(runs)));
  print(`  retained readings per state (end)`, last.retained);
  print(`  bytes of JSON stored per state (end)`, last.stateBytes);
  print(`  changes published in the run`, last.changes);
}

