import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluate, excursionsOf, settle, withoutPending, type EvaluationOptions } from './engine.js';
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
};

/** A reading with its delivery slack: delivered in the order of recordedAt + slack, slack < the bound. */
const reading = fc.record({
  deviceId: fc.constantFrom('a', 'b', 'c'),
  second: fc.integer({ min: 0, max: 2000 }),
  meters: fc.option(fc.constantFrom(0, 100, 190, 205, 215, 230, 300, 330, 400, 1000), { nil: undefined }),
  accuracy: fc.option(fc.integer({ min: 0, max: 60 }), { nil: null }),
  temperatureC: fc.option(fc.integer({ min: -2, max: 12 }), { nil: null }),
  humidityPercent: fc.option(fc.integer({ min: 60, max: 95 }), { nil: null }),
  shockG: fc.option(fc.integer({ min: 0, max: 8 }), { nil: null }),
  lightLux: fc.option(fc.constantFrom(0, 50, 150), { nil: null }),
  batteryPercent: fc.option(fc.integer({ min: 10, max: 20 }), { nil: null }),
  slack: fc.integer({ min: 0, max: LATENESS_SECONDS - 1 }),
  cut: fc.boolean(),
});
type Generated = fc.Arbitrary<typeof reading extends fc.Arbitrary<infer R> ? R : never>;

function toReading(g: Generated extends fc.Arbitrary<infer R> ? R : never): GeofenceReading {
  const recordedAt = new Date(T0 + g.second * 1000).toISOString();
  return {
    deviceId: g.deviceId,
    recordedAt,
    receivedAt: recordedAt,
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

function inOrder(readings: GeofenceReading[]): { changes: GeofenceChange[]; state: GeofenceState } {
  const sorted = [...readings].sort((x, y) => Date.parse(String(x.recordedAt)) - Date.parse(String(y.recordedAt)));
  const first = evaluate(null, sorted, opts);
  const last = settle(first.state, opts);
  return { changes: [...first.changes, ...last.changes], state: last.state };
}

/** Delivered shuffled within the bound, in batches, the state stored as JSON between evaluations. */
function inBatches(generated: Array<Generated extends fc.Arbitrary<infer R> ? R : never>) {
  const order = [...generated].sort((x, y) => x.second + x.slack - (y.second + y.slack));
  let state: GeofenceState | null = null;
  const changes: GeofenceChange[] = [];
  let batch: GeofenceReading[] = [];
  let ignored = 0;
  const flush = () => {
    const result = evaluate(state === null ? null : (JSON.parse(JSON.stringify(state)) as GeofenceState), batch, opts);
    state = result.state;
    changes.push(...result.changes);
    ignored += result.ignored;
    batch = [];
  };
  for (const g of order) {
    batch.push(toReading(g));
    if (g.cut) flush();
  }
  flush();
  const last = settle(state!, opts);
  changes.push(...last.changes);
  return { changes, state: last.state, ignored };
}

describe('evaluation in event time (property-based)', () => {
  it('readings shuffled within the lateness bound and split into batches give exactly the visits, alerts and excursions of the in-order run', () => {
    fc.assert(
      fc.property(timeline, (generated) => {
        const expected = inOrder(generated.map(toReading));
        const actual = inBatches(generated);
        expect(actual.ignored).toBe(0);
        expect(sortedJson(actual.changes)).toEqual(sortedJson(expected.changes));
        expect(finalPeaks(actual.changes)).toEqual(finalPeaks(expected.changes));
        expect(excursionsOf(actual.state)).toEqual(excursionsOf(expected.state));
        expect(actual.state).toEqual(expected.state);
      }),
      { numRuns: 300 },
    );
  });

  it('publishes no event twice across re-evaluations and never two open alerts of one device and kind', () => {
    fc.assert(
      fc.property(timeline, (generated) => {
        const { changes } = inBatches(generated);
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

  it('a state stored without its readings and restored from the readings recorded since its horizon is the same state', () => {
    fc.assert(
      fc.property(timeline, fc.integer({ min: 0, max: 2000 }), (generated, split) => {
        const readings = generated.map(toReading);
        const delivered = readings.filter((r) => Date.parse(String(r.recordedAt)) < T0 + split * 1000);
        const first = evaluate(null, delivered, opts);
        const stored = JSON.parse(JSON.stringify(withoutPending(first.state))) as GeofenceState;
        const since = delivered.filter((r) => stored.horizon === null || Date.parse(String(r.recordedAt)) >= stored.horizon);
        const restored = evaluate(stored, since, opts);
        expect(restored.changes).toEqual([]);
        expect(restored.state).toEqual(first.state);
      }),
      { numRuns: 200 },
    );
  });

  it('a reading older than the lateness bound changes nothing published and nothing kept', () => {
    fc.assert(
      fc.property(timeline, reading, (generated, old) => {
        const first = evaluate(null, generated.map(toReading), opts);
        const horizon = first.state.horizon!;
        const stale = { ...toReading(old), recordedAt: new Date(horizon - 1 - old.second * 1000).toISOString() };
        const after = evaluate(first.state, [stale], opts);
        expect(after.ignored).toBe(1);
        expect(after.changes).toEqual([]);
        expect(after.state).toEqual({ ...first.state, lastReceivedAt: Math.max(first.state.lastReceivedAt!, Date.parse(stale.receivedAt as string)) });
      }),
      { numRuns: 200 },
    );
  });
});
