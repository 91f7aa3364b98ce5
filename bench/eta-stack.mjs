#!/usr/bin/env node
// `npm run bench:eta-stack` (issue 33): the estimated arrival measured through the stack as users run it. The
// same trips as `npm run bench:eta` for the same BENCH_ETA_SEED (one generator, bench/lib/eta-trips.mjs),
// scored the same way, but fed over HTTP to the gateway, ingested by the DMS, evaluated by the worker over
// NATS and stored in PostgreSQL; the estimate is read back with GET, as a client reads it.
//
// The stack: gateway, OMS, DMS and worker as child processes (bench/lib/stack.mjs) on databases, a NATS
// subject prefix and a Redis key prefix of their own (BENCH_PREFIX, default bench_etastack). One account
// holds every lane: per lane its origin and destination (points of interest, radius 500 m, dwell 60 s), per
// trip a device and a shipment (origin, destination, the plan for the fresh trips, `autoTransitions`, so
// that leaving the origin starts it and arriving delivers it) with the device assigned in a set.
//
// Event time. A trip lasts up to 16 h of event time, so the trips are replayed in the past: every trip is
// moved to start at the same moment, early enough that its last reading is 10 min before the run starts.
// A reading reaches a shipment only inside the device's assignment period, which the API opens at the
// server's clock (docs/readings.md): the periods are moved back before that moment with one UPDATE of
// `assignment_periods` in the benchmark's own DMS database, as bench:evaluation does. That is the only
// write past the API; the estimates are read with GET alone, whichever table stores them.
//
// The run: every history trip (BENCH_ETA_HISTORY per lane) is fed, then the benchmark waits until each is
// Delivered (the lane's trip is added in that evaluation); then the fresh trips (BENCH_ETA_TRIPS per lane).
// Each trip posts its batches one after the other, as its device would send them (`POST /readings`, one
// batch per receipt moment, a coverage gap's backlog in one batch, oldest first), BENCH_ETA_CONCURRENCY (16)
// trips at a time, the fresh ones in the generator's order. At 25, 50 and 75 % of a fresh trip's true
// duration, after the batch that reaches it, the benchmark polls GET shipment until `eta.asOf` reaches the
// newest reading posted, and scores that `eta` as bench:eta scores its estimate. `shipment.eta_changed` are
// counted per fresh trip from `GET /events` once every trip is delivered.
import pg from 'pg';
import { readBenchConfig } from './lib/config.mjs';
import { batchesOf, checkpointsOf, etaTable, LANES, laneScores, laneTrips, medianOf, settings, score, shiftTrip, summarize } from './lib/eta-trips.mjs';
import { api, inPool, issueToken } from './lib/http.mjs';
import { machine, print, writeResults } from './lib/report.mjs';
import { provision } from './lib/seed.mjs';
import { BenchStack, databaseNames, databaseUrl, resetDatabases, sleep } from './lib/stack.mjs';

const base = readBenchConfig();
const config = {
  ...base,
  prefix: process.env.BENCH_PREFIX ? base.prefix : 'bench_etastack',
  concurrency: Number(process.env.BENCH_ETA_CONCURRENCY ?? 16),
};
/** How long an estimate may take to reach the newest reading posted before the checkpoint counts as missed. */
const ESTIMATE_TIMEOUT_MS = 120_000;
/** How long the trips may take to be delivered once their last reading is posted. */
const DELIVERY_TIMEOUT_MS = 120_000;
const POLL_MS = 50;

const stack = await new BenchStack(config, { services: ['oms', 'dms', 'worker', 'gateway'] }).prepare();
const results = { startedAt: new Date().toISOString(), machine: machine(), settings: { ...settings, concurrency: config.concurrency } };

async function main() {
  const names = databaseNames(config);
  const lanes = LANES.map((lane, index) => laneTrips(lane, index));
  const trips = lanes.flatMap(({ history, fresh }, lane) => [
    ...history.map((trip) => ({ lane, trip, fresh: false })),
    ...fresh.map((trip) => ({ lane, trip, fresh: true })),
  ]);
  const span = Math.max(...trips.map(({ trip }) => trip.fixes.at(-1).received - trip.start));
  const eventStart = Date.now() - span - 10 * 60_000;
  for (const entry of trips) entry.trip = shiftTrip(entry.trip, eventStart - entry.trip.start);
  print(`bench:eta-stack  seed ${settings.seed}, ${settings.historyTrips} history + ${settings.trips} estimated trips per lane, ` +
    `${config.concurrency} trips at a time; event time from ${new Date(eventStart).toISOString()} (${(span / 3_600_000).toFixed(1)} h)`);

  await resetDatabases(config, [names.gateway, names.oms, names.dms]);
  const { credentials, readAccountId: accountId } = provision(stack);
  results.startup = await stack.start('eta');
  const token = await issueToken(stack.base, credentials);
  const at = (path) => `/v1/accounts/${accountId}${path}`;
  const call = (method, path, body) => api(stack.base, method, at(path), { token, body });

  for (const [index, { geometry }] of lanes.entries()) {
    for (const place of [geometry.origin, geometry.destination]) {
      const { body } = await call('POST', '/points-of-interest', {
        name: `Lane ${index} ${place === geometry.origin ? 'origin' : 'destination'}`,
        kind: 'Warehouse',
        location: { lat: place.lat, lng: place.lng },
        radiusMeters: place.radiusMeters,
        dwellSeconds: place.dwellSeconds,
      });
      place.poiId = body.id;
    }
  }
  await inPool('shipments and devices', trips.length, config.seedConcurrency, async (i) => {
    const entry = trips[i];
    const { geometry } = lanes[entry.lane];
    const { body: shipment } = await call('POST', '/shipments', {
      name: `ETA lane ${entry.lane} ${entry.fresh ? 'trip' : 'history'} ${i}`,
      originId: geometry.origin.poiId,
      destinationId: geometry.destination.poiId,
      autoTransitions: true,
      ...(entry.fresh ? { plannedArrivalAt: new Date(entry.trip.planned).toISOString() } : {}),
    });
    const { body: set } = await call('POST', `/shipments/${shipment.id}/sets`, { name: 'Pallet', kind: 'Pallet' });
    const { body: device } = await call('POST', '/devices', { serialNumber: `ETA-${String(i).padStart(5, '0')}`, model: 'TempTrack T4' });
    await call('PUT', `/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`);
    Object.assign(entry, { shipmentId: shipment.id, deviceId: device.id });
  });
  await backdateAssignments(config, names.dms, eventStart - 3_600_000);

  const ingest = { batches: 0, accepted: 0, duplicates: 0, unassigned: 0, rejected: 0 };
  /** Posts one batch of the trip's device; counts what the DMS did with it. */
  async function post(entry, fixes) {
    const readings = fixes.map((fix) => ({ deviceId: entry.deviceId, recordedAt: new Date(fix.t).toISOString(), location: { lat: fix.lat, lng: fix.lng, accuracyMeters: 10 } }));
    const { body } = await call('POST', '/readings', { readings });
    ingest.batches++;
    ingest.accepted += body.accepted;
    ingest.duplicates += body.duplicates;
    ingest.unassigned += body.unassigned;
    ingest.rejected += body.rejected.length;
  }

  /** Wall-clock ms from a checkpoint's last POST to the stored estimate reaching its newest reading. */
  const estimateDelays = [];
  const missed = [];
  /**
   * GET shipment until its `eta.asOf` reaches `newest` (ms). No estimate (`{missed}`) when the shipment is
   * Delivered already (a coverage gap held back the readings past the checkpoint and the arrival: they
   * came in one batch, and a delivered shipment has no eta) or after ESTIMATE_TIMEOUT_MS.
   */
  async function estimateAsOf(entry, newest) {
    const began = performance.now();
    let wait = POLL_MS;
    while (performance.now() - began < ESTIMATE_TIMEOUT_MS) {
      const { body } = await call('GET', `/shipments/${entry.shipmentId}`);
      if (body.eta?.asOf && Date.parse(body.eta.asOf) >= newest) {
        estimateDelays.push(performance.now() - began);
        return { eta: body.eta };
      }
      if (body.status === 'Delivered') return { missed: 'delivered' };
      await sleep(wait);
      wait = Math.min(500, wait * 2);
    }
    return { missed: 'timeout' };
  }

  const scores = lanes.map(() => laneScores());
  async function feed(entry) {
    const { trip } = entry;
    const { destination } = lanes[entry.lane].geometry;
    const checkpoints = entry.fresh ? checkpointsOf(trip) : [];
    const received = [];
    for (const { received: now, fixes } of batchesOf(trip)) {
      await post(entry, fixes);
      received.push(...fixes);
      for (const checkpoint of checkpoints) {
        if (checkpoint.done || now < checkpoint.at) continue;
        checkpoint.done = true;
        const { eta, missed: why } = await estimateAsOf(entry, fixes.at(-1).t);
        if (why) {
          missed.push({ lane: entry.lane, trip: trip.index, share: checkpoint.share, shipmentId: entry.shipmentId, why, afterArrival: now >= trip.arrival });
          continue;
        }
        const estimate = { arrivalAt: Date.parse(eta.arrivalAt), earliestAt: Date.parse(eta.earliestAt), latestAt: Date.parse(eta.latestAt), basis: eta.basis };
        score(scores[entry.lane], { trip, share: checkpoint.share, now, received, destination, estimate });
      }
    }
  }
  /**
   * The trips fed, BENCH_ETA_CONCURRENCY at a time, in `order`. The fresh trips go in the generator's order
   * on every lane (the longer lanes first at each step), as bench:eta adds them to their lanes: fed longest
   * first, the slowest trips of each lane were delivered first and made the lane slower for the rest (every
   * estimate later than in-process, by a median 0.8 to 5.8 min at 25 % over the lanes of seeds 1 and 2).
   */
  async function feedAll(label, entries, order) {
    const ordered = [...entries].sort(order);
    await inPool(label, ordered.length, config.concurrency, (i) => feed(ordered[i]));
  }

  /** GET each shipment until it is Delivered; its delivery against the true arrival (ms, signed). */
  async function delivered(entries) {
    const deadline = performance.now() + DELIVERY_TIMEOUT_MS;
    const offsets = [];
    let late = 0;
    for (const entry of entries) {
      let shipment;
      while (true) {
        ({ body: shipment } = await call('GET', `/shipments/${entry.shipmentId}`));
        if (shipment.status === 'Delivered' || performance.now() > deadline) break;
        await sleep(200);
      }
      if (shipment.status === 'Delivered') offsets.push(Date.parse(shipment.deliveredAt) - entry.trip.arrival);
      else late++;
    }
    return { delivered: offsets.length, notDelivered: late, deliveredMinusTrueMedianS: Math.round(medianOf(offsets) / 1000) };
  }

  const began = performance.now();
  // The history trips all count before any fresh one: the longest first, so that the last ones are short.
  await feedAll('history trips', trips.filter((entry) => !entry.fresh), (a, b) => b.trip.fixes.length - a.trip.fixes.length);
  results.history = await delivered(trips.filter((entry) => !entry.fresh));
  print(`  history: ${results.history.delivered} delivered, ${results.history.notDelivered} not; deliveredAt - true arrival median ${results.history.deliveredMinusTrueMedianS} s`);
  const fresh = trips.filter((entry) => entry.fresh);
  await feedAll('fresh trips', fresh, (a, b) => a.trip.index - b.trip.index || b.lane - a.lane);
  results.fresh = await delivered(fresh);
  print(`  fresh: ${results.fresh.delivered} delivered, ${results.fresh.notDelivered} not; deliveredAt - true arrival median ${results.fresh.deliveredMinusTrueMedianS} s`);
  results.feedSeconds = Math.round((performance.now() - began) / 1000);

  const events = await etaChangedPerShipment(call);
  results.ingest = ingest;
  const delays = [...estimateDelays].sort((a, b) => a - b);
  results.estimateDelayMs = { median: Math.round(medianOf(delays)), p99: Math.round(delays[Math.floor(delays.length * 0.99)] ?? NaN), max: Math.round(delays.at(-1) ?? NaN) };
  results.missed = missed;
  results.lanes = lanes.map(({ lane }, index) => {
    const count = fresh.filter((entry) => entry.lane === index).reduce((sum, entry) => sum + (events.get(entry.shipmentId) ?? 0), 0);
    return summarize(lane, scores[index], count);
  });

  print(`Median |eta.arrivalAt - true arrival| in minutes at 25 / 50 / 75 % of the trip, read with GET; "% rem." = median error at half-trip over the true remaining time.`);
  print(etaTable(results.lanes));
  print(`readings: ${ingest.batches} batches, ${ingest.accepted} accepted, ${ingest.duplicates} duplicates, ${ingest.unassigned} unassigned, ${ingest.rejected} rejected; ` +
    `fed in ${results.feedSeconds} s`);
  print(`estimate stored up to the newest reading: median ${results.estimateDelayMs.median} ms, p99 ${results.estimateDelayMs.p99} ms, max ${results.estimateDelayMs.max} ms after the POST; ` +
    `checkpoints without an estimate: ${missed.filter((m) => m.why === 'delivered').length} delivered already, ${missed.filter((m) => m.why === 'timeout').length} none within ${ESTIMATE_TIMEOUT_MS / 1000} s`);
  results.loadAverageAtEnd = machine().loadAverageAtStart;
  print(`load average at start ${results.machine.loadAverageAtStart.join(' ')}, at end ${results.loadAverageAtEnd.join(' ')}`);
  print(`results: ${writeResults('eta-stack.json', results)}`);
}

/**
 * Opens every assignment period of the benchmark's DMS database at `from`: the API opens them at the
 * server's clock, and the trips are replayed hours in the past (see the header).
 */
async function backdateAssignments(config, database, from) {
  const client = new pg.Client({ connectionString: databaseUrl(config, database) });
  await client.connect();
  try {
    await client.query('UPDATE assignment_periods SET assigned_at = $1', [new Date(from)]);
  } finally {
    await client.end();
  }
}

/** The `shipment.eta_changed` events of the account, counted per shipment, from the feed. */
async function etaChangedPerShipment(call) {
  const counts = new Map();
  let cursor = null;
  do {
    const { body } = await call('GET', `/events?type=shipment.eta_changed&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    for (const event of body.items) counts.set(event.data.shipmentId, (counts.get(event.data.shipmentId) ?? 0) + 1);
    cursor = body.metadata.nextCursor;
  } while (cursor);
  return counts;
}

let exitCode = 0;
try {
  await main();
} catch (error) {
  process.stderr.write(`\nbench:eta-stack failed: ${error.stack ?? error}\n`);
  exitCode = 1;
} finally {
  await stack.close();
}
process.exit(exitCode);
