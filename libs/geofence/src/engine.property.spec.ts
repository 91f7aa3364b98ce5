import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluate, excursionsOf, restore, settle, withoutPending, type EvaluationOptions } from './engine.js';
import { EARTH_RADIUS_METERS } from './geo.js';
import { PlaceIndex } from './place-index.js';
import type { GeofenceChange, GeofenceReading, GeofenceState } from './types.js';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const CENTRE = { lat: 52.52, lng: 13.405 };
const LATENESS_SECONDS = 300;

function east(meters: number): { lat: number; lng: number } {
  const dLng = meters / (EARTH_RADIUS_METERS * Math.cos((CENTRE.lat * Math.PI) / 180));
  return { lat: CENTRE.lat, lng: CENTRE.lng + (dLng * 180) / Math.PI };
}

const DEVICES = ['a', 'b', 'c'] as const;

const opts: EvaluationOptions = {
  places: new PlaceIndex([
    { id: 'warehouse', ...CENTRE, radiusMeters: 200, dwellSeconds: 60 },
    { id: 'dock', ...east(320), radiusMeters: 80, dwellSeconds: 0 },
  ]),
  conditions: {
    temperature: { minC: 2, maxC: 8, minDurationSeconds: 30 },
    humidity: { maxPercent: 80, minDurationSeconds: 0 },
    shock: { maxG: 4 },
    light: { maxLux: 100 },
    battery: { minPercent: 15 },
  },
  status: 'InTransit',
  latenessSeconds: LATENESS_SECONDS,
  // The three devices are assigned when the timeline starts: each holds back the others from then on.
  assigned: DEVICES.map((deviceId) => ({ deviceId, assignedAt: T0 })),
};

/**
 * A reading and how it travels: `jitter` is added to its device's delay (each device's batches still
 * arrive in its own time order), `cut` ends a batch after it, `shuffle` orders it within its batch.
 */
const reading = fc.record({
  deviceId: fc.constantFrom(...DEVICES),
  second: fc.integer({ min: 0, max: 2000 }),
  meters: fc.option(fc.constantFrom(0, 100, 190, 205, 215, 230, 300, 330, 400, 1000), { nil: undefined }),
  accuracy: fc.option(fc.integer({ min: 0, max: 60 }), { nil: null }),
  temperatureC: fc.option(fc.integer({ min: -2, max: 12 }), { nil: null }),
  humidityPercent: fc.option(fc.integer({ min: 60, max: 95 }), { nil: null }),
  shockG: fc.option(fc.integer({ min: 0, max: 8 }), { nil: null }),
  lightLux: fc.option(fc.constantFrom(0, 50, 150), { nil: null }),
  batteryPercent: fc.option(fc.integer({ min: 10, max: 20 }), { nil: null }),
  jitter: fc.integer({ min: 0, max: 50 }),
  cut: fc.boolean(),
  shuffle: fc.integer({ min: 0, max: 1000 }),
});
/** Each device's delay between recording and receipt, different per device, shorter than the bound minus the jitter. */
const delays = fc.tuple(...DEVICES.map(() => fc.integer({ min: 0, max: LATENESS_SECONDS - 51 - 100 })));
type Generated = fc.Arbitrary<typeof reading extends fc.Arbitrary<infer R> ? R : never>;

type G = Generated extends fc.Arbitrary<infer R> ? R : never;

function toReading(g: G, receivedAt?: number): GeofenceReading {
  const recordedAt = new Date(T0 + g.second * 1000).toISOString();
  return {
    deviceId: g.deviceId,
    recordedAt,
    receivedAt: receivedAt === undefined ? recordedAt : new Date(receivedAt).toISOString(),
    location: g.meters === undefined ? null : { ...east(g.meters), accuracyMeters: g.accuracy },
    temperatureC: g.temperatureC,
    humidityPercent: g.humidityPercent,
    shockG: g.shockG,
    lightLux: g.lightLux,
    batteryPercent: g.batteryPercent,
  };
}

/** One reading per (device, second), as the ingest guarantees. */
const timeline = fc.uniqueArray(reading, { minLength: 1, maxLength: 80, selector: (g) => `${g.deviceId}/${g.second}` });

const published = (changes: GeofenceChange[]) => changes.filter((c) => c.type !== 'alertPeak');
const sortedJson = (changes: GeofenceChange[]) => published(changes).map((c) => JSON.stringify(c)).sort();

/** The peak each alert ended with, whichever evaluation reported it. */
function finalPeaks(changes: GeofenceChange[]): Record<string, number | null> {
  const peaks: Record<string, number | null> = {};
  for (const c of changes) if (c.type === 'alertOpened' || c.type === 'alertPeak' || c.type === 'alertClosed') peaks[c.key] = c.peakValue;
  return peaks;
}

/**
 * Every device reports at least every 100 s of event time (a reading with nothing but the time, half a
 * second off the generated ones), so no device is silent for the bound while the timeline runs.
 */
function withHeartbeats(generated: G[]): G[] {
  const beats: G[] = [];
  for (const deviceId of DEVICES) {
    for (let second = 0; second <= 2000; second += 100) {
      beats.push({ deviceId, second: second + 0.5, meters: undefined, accuracy: null, temperatureC: null, humidityPercent: null, shockG: null, lightLux: null, batteryPercent: null, jitter: 0, cut: false, shuffle: 0 });
    }
  }
  return [...generated, ...beats];
}

function inOrder(readings: GeofenceReading[]): { changes: GeofenceChange[]; state: GeofenceState } {
  const sorted = [...readings].sort((x, y) => Date.parse(String(x.recordedAt)) - Date.parse(String(y.recordedAt)));
  const first = evaluate(null, sorted, opts);
  const last = settle(first.state, opts);
  return { changes: [...first.changes, ...last.changes], state: last.state };
}

/**
 * Delivered as devices with different delays would: each reading received at its recording time plus its
 * device's delay plus a jitter, never before the device's previous reading (each device's batches in its
 * own time order); the server takes them in receipt order, cut into batches, each batch in any order,
 * evaluated at the newest receipt in it, the state stored as JSON between evaluations.
 */
function inBatches(generated: G[], deviceDelays: readonly number[]) {
  const received = new Map<G, number>();
  const last = new Map<string, number>();
  for (const g of [...generated].sort((x, y) => x.second - y.second)) {
    const at = Math.max(last.get(g.deviceId) ?? -Infinity, T0 + (g.second + deviceDelays[DEVICES.indexOf(g.deviceId as 'a')] + g.jitter) * 1000);
    last.set(g.deviceId, at);
    received.set(g, at);
  }
  const order = [...generated].sort((x, y) => received.get(x)! - received.get(y)! || x.second - y.second);
  let state: GeofenceState | null = null;
  const changes: GeofenceChange[] = [];
  let batch: G[] = [];
  let ignored = 0;
  let late = 0;
  const flush = () => {
    if (batch.length === 0) return;
    const now = Math.max(...batch.map((g) => received.get(g)!));
    const shuffled = [...batch].sort((x, y) => x.shuffle - y.shuffle).map((g) => toReading(g, received.get(g)));
    const result = evaluate(state === null ? null : (JSON.parse(JSON.stringify(state)) as GeofenceState), shuffled, { ...opts, now });
    state = result.state;
    changes.push(...result.changes);
    ignored += result.ignored;
    late += result.late;
    batch = [];
  };
  for (const g of order) {
    batch.push(g);
    if (g.cut) flush();
  }
  flush();
  const settled = settle(state!, opts);
  changes.push(...settled.changes);
  return { changes, state: settled.state, ignored, late };
}

/** The state without what depends on delivery (receipt times) rather than on the readings. */
const eventTimeOf = (state: GeofenceState) => ({
  ...state,
  lastReceivedAt: null,
  devices: Object.fromEntries(Object.entries(state.devices).map(([id, d]) => [id, d.w])),
});

describe('evaluation in event time (property-based)', () => {
  it('devices with different delays, each in its own time order, any split into batches and any order within one give exactly the in-order run', () => {
    fc.assert(
      fc.property(timeline, delays, (generated, deviceDelays) => {
        const all = withHeartbeats(generated);
        const expected = inOrder(all.map((g) => toReading(g)));
        const actual = inBatches(all, deviceDelays);
        expect(actual.ignored).toBe(0);
        expect(actual.late).toBe(0);
        expect(sortedJson(actual.changes)).toEqual(sortedJson(expected.changes));
        expect(finalPeaks(actual.changes)).toEqual(finalPeaks(expected.changes));
        expect(excursionsOf(actual.state)).toEqual(excursionsOf(expected.state));
        expect(eventTimeOf(actual.state)).toEqual(eventTimeOf(expected.state));
      }),
      { numRuns: 300 },
    );
  });

  it('publishes no event twice across re-evaluations and never two open alerts of one device and kind', () => {
    fc.assert(
      fc.property(timeline, delays, (generated, deviceDelays) => {
        const { changes } = inBatches(withHeartbeats(generated), deviceDelays);
        const events = published(changes).map((c) => `${c.type}/${c.key}`);
        expect(new Set(events).size).toBe(events.length);
        const open = new Map<string, number>();
        for (const c of changes) {
          if (c.type !== 'alertOpened' && c.type !== 'alertClosed') continue;
          const id = `${c.deviceId}/${c.kind}`;
          open.set(id, (open.get(id) ?? 0) + (c.type === 'alertOpened' ? 1 : -1));
          expect(open.get(id)).toBeGreaterThanOrEqual(0);
          expect(open.get(id)).toBeLessThanOrEqual(1);
        }
        // Every departure follows its arrival; a place never has two visits open.
        const visiting = new Set<string>();
        for (const c of changes) {
          if (c.type === 'arrived') {
            expect(visiting.has(c.poiId)).toBe(false);
            visiting.add(c.poiId);
          } else if (c.type === 'departed') {
            expect(visiting.delete(c.poiId)).toBe(true);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a state stored without its readings and restored from the readings recorded since its horizon is the same state, watermarks included', () => {
    fc.assert(
      fc.property(timeline, fc.integer({ min: 0, max: 2000 }), (generated, split) => {
        const readings = generated.map((g) => toReading(g));
        const delivered = readings.filter((r) => Date.parse(String(r.recordedAt)) < T0 + split * 1000);
        const first = evaluate(null, delivered, opts);
        const stored = JSON.parse(JSON.stringify(withoutPending(first.state))) as GeofenceState;
        const since = delivered.filter((r) => stored.horizon === null || Date.parse(String(r.recordedAt)) >= stored.horizon);
        const restored = restore(stored, since, opts);
        expect(restored.changes).toEqual([]);
        expect(restored.late).toBe(0);
        expect(restored.state).toEqual(first.state);
      }),
      { numRuns: 200 },
    );
  });

  it('a reading older than its own device\'s watermark is counted late and changes nothing published', () => {
    fc.assert(
      fc.property(timeline, delays, reading, fc.integer({ min: 1, max: 2000 }), (generated, deviceDelays, old, back) => {
        const first = inBatches(withHeartbeats(generated), deviceDelays);
        // Everything published (settled), then one reading of a device recorded before its watermark.
        const watermark = first.state.devices[old.deviceId].w;
        const stale = { ...toReading(old), recordedAt: new Date(watermark - back * 1000).toISOString(), receivedAt: new Date(first.state.lastReceivedAt!).toISOString() };
        const after = evaluate(first.state, [stale], opts);
        expect(after.late).toBe(1);
        expect(after.ignored).toBe(1);
        expect(after.changes).toEqual([]);
        const device = first.state.devices[old.deviceId];
        const receipt = Math.max(device.r, first.state.lastReceivedAt!);
        expect(after.state).toEqual({ ...first.state, devices: { ...first.state.devices, [old.deviceId]: { ...device, r: receipt } } });
      }),
      { numRuns: 200 },
    );
  });

  it('a late reading at or after the horizon counts for what is not published yet and repeats nothing published', () => {
    fc.assert(
      fc.property(timeline, reading, (generated, old) => {
        // Device c reported once at the start and holds the horizon there; a and b ran ahead.
        const readings = generated.filter((g) => g.deviceId !== 'c').map((g) => toReading(g));
        const start = evaluate(null, [{ deviceId: 'c', recordedAt: new Date(T0).toISOString(), receivedAt: new Date(T0).toISOString() }, ...readings], opts);
        const device = old.deviceId === 'c' ? 'a' : old.deviceId;
        const watermark = start.state.devices[device].w;
        fc.pre(watermark > start.state.horizon!);
        const t = start.state.horizon! + Math.floor((watermark - start.state.horizon!) / 2);
        fc.pre(!readings.some((r) => r.deviceId === device && Date.parse(String(r.recordedAt)) === t));
        const stale = { ...toReading({ ...old, deviceId: device }), recordedAt: new Date(t).toISOString(), receivedAt: new Date(T0).toISOString() };
        const after = evaluate(start.state, [stale], opts);
        expect(after.late).toBe(1);
        expect(after.ignored).toBe(0);
        expect(after.state.pending).toHaveLength(start.state.pending.length + 1);
        const published = new Set(start.changes.filter((c) => c.type !== 'alertPeak').map((c) => `${c.type}/${c.key}`));
        const rest = [...after.changes, ...settle(after.state, opts).changes];
        for (const c of rest) if (c.type !== 'alertPeak') expect(published.has(`${c.type}/${c.key}`)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
});
