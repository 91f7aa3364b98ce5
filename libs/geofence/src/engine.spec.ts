import { describe, expect, it } from 'vitest';
import {
  closeAlerts,
  evaluate,
  evaluationDueAt,
  excursionsOf,
  openSignalLoss,
  settle,
  restore,
  settleDueAt,
  signalLossDue,
  withoutPending,
  type EvaluationOptions,
} from './engine.js';
import { EARTH_RADIUS_METERS } from './geo.js';
import { PlaceIndex } from './place-index.js';
import type { AlertClosedChange, AlertOpenedChange, AlertPeakChange, Conditions, GeofenceChange, GeofenceReading, GeofenceState } from './types.js';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const at = (seconds: number): string => new Date(T0 + seconds * 1000).toISOString();
const CENTRE = { lat: 52.52, lng: 13.405 };
const WAREHOUSE = { id: 'warehouse', ...CENTRE, radiusMeters: 200, dwellSeconds: 60 };

/** A position `meters` east of the warehouse's centre. */
function east(meters: number): { lat: number; lng: number } {
  const dLng = meters / (EARTH_RADIUS_METERS * Math.cos((CENTRE.lat * Math.PI) / 180));
  return { lat: CENTRE.lat, lng: CENTRE.lng + (dLng * 180) / Math.PI };
}

function position(seconds: number, meters: number, accuracyMeters: number | null = null, deviceId = 'd1'): GeofenceReading {
  return { deviceId, recordedAt: at(seconds), receivedAt: at(seconds), location: { ...east(meters), accuracyMeters } };
}

function measure(seconds: number, fields: Partial<GeofenceReading>, deviceId = 'd1'): GeofenceReading {
  return { deviceId, recordedAt: at(seconds), receivedAt: at(seconds), ...fields };
}

function options(overrides: Partial<EvaluationOptions> = {}): EvaluationOptions {
  return { places: new PlaceIndex([WAREHOUSE]), conditions: null, status: 'InTransit', latenessSeconds: 600, ...overrides };
}

/** Everything final: one evaluation of all readings, then settle. */
function run(readings: GeofenceReading[], opts = options(), from: GeofenceState | null = null): { changes: GeofenceChange[]; state: GeofenceState } {
  const first = evaluate(from, readings, opts);
  const last = settle(first.state, opts);
  return { changes: [...first.changes, ...last.changes], state: last.state };
}

const visits = (changes: GeofenceChange[]) => changes.filter((c) => c.type === 'arrived' || c.type === 'departed');
const alerts = (changes: GeofenceChange[]) =>
  changes.filter((c): c is AlertOpenedChange | AlertPeakChange | AlertClosedChange => c.type.startsWith('alert'));

describe('visits', () => {
  it('arrives at the first inside position once the dwell passed, departs at the first outside one', () => {
    const { changes } = run([position(0, 1000), position(10, 50), position(40, 60), position(70, 80), position(100, 2000), position(200, 2000)]);
    expect(visits(changes)).toEqual([
      { type: 'arrived', key: `warehouse/${at(10)}`, poiId: 'warehouse', arrivedAt: at(10) },
      { type: 'departed', key: `warehouse/${at(10)}`, poiId: 'warehouse', arrivedAt: at(10), departedAt: at(100) },
    ]);
  });

  it('makes no visit when the shipment leaves before the dwell', () => {
    const { changes } = run([position(0, 50), position(30, 50), position(50, 500), position(300, 500)]);
    expect(visits(changes)).toEqual([]);
  });

  it('keeps the visit through an absence shorter than the dwell', () => {
    const { changes } = run([position(0, 50), position(100, 50), position(110, 500), position(140, 50), position(400, 50)]);
    expect(visits(changes)).toEqual([{ type: 'arrived', key: `warehouse/${at(0)}`, poiId: 'warehouse', arrivedAt: at(0) }]);
  });

  it('needs event time to pass the dwell: an arrival with nothing recorded after it is not yet a visit', () => {
    const { changes } = run([position(0, 50), position(59, 50)]);
    expect(visits(changes)).toEqual([]);
  });

  it('jitter in the hysteresis band (200..220 m) makes no visit and ends none', () => {
    const jitter = Array.from({ length: 40 }, (_, i) => position(i * 30, i % 2 ? 195 : 215));
    // Inside at 195 m, then the band: nothing changes, so one arrival and no departure.
    const { changes } = run(jitter);
    expect(visits(changes)).toEqual([{ type: 'arrived', key: `warehouse/${at(30)}`, poiId: 'warehouse', arrivedAt: at(30) }]);
    // From outside, the band alone never enters.
    const fromOutside = run([position(0, 1000), ...Array.from({ length: 20 }, (_, i) => position(10 + i * 30, i % 2 ? 205 : 219))]);
    expect(visits(fromOutside.changes)).toEqual([]);
  });

  it('a position whose accuracy spans the edge counts neither inside nor outside', () => {
    // 150 m + 80 m accuracy > 200 m: not inside; 150 - 80 < 220: not outside.
    expect(visits(run([position(0, 1000), position(10, 150, 80), position(500, 150, 80)]).changes)).toEqual([]);
    // Once inside, the same uncertain position does not end the visit.
    const kept = run([position(0, 100, 5), position(100, 150, 80), position(400, 150, 80)]);
    expect(visits(kept.changes)).toEqual([{ type: 'arrived', key: `warehouse/${at(0)}`, poiId: 'warehouse', arrivedAt: at(0) }]);
    // No accuracy: exact.
    expect(visits(run([position(0, 199), position(100, 199)]).changes)).toHaveLength(1);
  });

  it('a shipment is inside while any device is, outside when all are', () => {
    const { changes } = run([
      position(0, 50, null, 'a'),
      position(0, 1000, null, 'b'),
      position(30, 1000, null, 'a'), // a leaves, b not yet in: outside before the dwell, no visit
      position(40, 50, null, 'b'),
      position(80, 1000, null, 'a'),
      position(120, 50, null, 'b'), // b stays: arrival at 40 confirmed at 100
      position(150, 1000, null, 'b'), // all outside from 150
      position(260, 1000, null, 'a'),
    ]);
    expect(visits(changes)).toEqual([
      { type: 'arrived', key: `warehouse/${at(40)}`, poiId: 'warehouse', arrivedAt: at(40) },
      { type: 'departed', key: `warehouse/${at(40)}`, poiId: 'warehouse', arrivedAt: at(40), departedAt: at(150) },
    ]);
  });

  it('a dwell of 0 arrives and departs at the positions themselves', () => {
    const opts = options({ places: new PlaceIndex([{ ...WAREHOUSE, dwellSeconds: 0 }]) });
    const { changes } = run([position(0, 50), position(10, 500)], opts);
    expect(visits(changes).map((c) => c.type)).toEqual(['arrived', 'departed']);
  });

  it('forgets a place removed from the account', () => {
    const first = evaluate(null, [position(0, 50), position(100, 50)], options({ latenessSeconds: 0 }));
    expect(Object.keys(first.state.places)).toEqual(['warehouse']);
    const later = evaluate(first.state, [position(200, 5000)], options({ latenessSeconds: 0, places: new PlaceIndex([]) }));
    expect(later.changes).toEqual([]);
    expect(later.state.places).toEqual({});
  });
});

describe('alerts', () => {
  const conditions: Conditions = {
    temperature: { minC: 2, maxC: 8, minDurationSeconds: 60 },
    humidity: { minPercent: 20, maxPercent: 80 },
    shock: { maxG: 4 },
    light: { maxLux: 100 },
    battery: { minPercent: 15 },
  };
  const opts = options({ conditions });

  it('TemperatureHigh opens after the minimum duration from the first out-of-range reading, tracks its peak, closes back in range', () => {
    const { changes } = run(
      [measure(0, { temperatureC: 5 }), measure(10, { temperatureC: 9 }), measure(40, { temperatureC: 12 }), measure(70, { temperatureC: 10 }), measure(90, { temperatureC: 13 }), measure(100, { temperatureC: 6 })],
      opts,
    );
    const key = `TemperatureHigh/d1/${at(10)}`;
    expect(alerts(changes)).toEqual([
      { type: 'alertOpened', key, kind: 'TemperatureHigh', deviceId: 'd1', startedAt: at(10), threshold: 8, peakValue: 12 },
      { type: 'alertClosed', key, kind: 'TemperatureHigh', deviceId: 'd1', endedAt: at(100), peakValue: 13 },
    ]);
  });

  it('a temperature excursion shorter than the minimum duration opens nothing but counts in the excursions', () => {
    const { changes, state } = run([measure(0, { temperatureC: 1 }), measure(30, { temperatureC: 0 }), measure(50, { temperatureC: 3 }), measure(500, { temperatureC: 4 })], opts);
    expect(alerts(changes)).toEqual([]);
    expect(excursionsOf(state)).toEqual({ temperatureSeconds: 50, humiditySeconds: 0 });
  });

  it('TemperatureLow, HumidityHigh, HumidityLow, Shock, Light and BatteryLow open and close, with thresholds and peaks', () => {
    const { changes } = run(
      [
        measure(0, { temperatureC: 1, humidityPercent: 90, shockG: 5, lightLux: 500, batteryPercent: 10 }),
        measure(30, { temperatureC: -3, humidityPercent: 95, shockG: 9, lightLux: 300, batteryPercent: 8 }),
        measure(70, { temperatureC: -1, humidityPercent: 10, shockG: 1, lightLux: 50, batteryPercent: 20 }),
        measure(80, { humidityPercent: 5 }),
        measure(90, { temperatureC: 4, humidityPercent: 50 }),
      ],
      opts,
    );
    const summary = alerts(changes).map((c) => [c.type, c.type === 'alertPeak' ? c.key : c.kind, 'startedAt' in c ? c.startedAt : 'endedAt' in c ? c.endedAt : '', 'threshold' in c ? c.threshold : '', c.peakValue]);
    expect(summary).toEqual([
      ['alertOpened', 'HumidityHigh', at(0), 80, 90],
      ['alertOpened', 'Shock', at(0), 4, 5],
      ['alertOpened', 'Light', at(0), 100, 500],
      ['alertOpened', 'BatteryLow', at(0), 15, 10],
      ['alertOpened', 'TemperatureLow', at(0), 2, -3],
      ['alertClosed', 'HumidityHigh', at(70), '', 95],
      ['alertClosed', 'Shock', at(70), '', 9],
      ['alertClosed', 'Light', at(70), '', 500],
      ['alertClosed', 'BatteryLow', at(70), '', 8],
      ['alertOpened', 'HumidityLow', at(70), 20, 10],
      ['alertClosed', 'TemperatureLow', at(90), '', -3],
      ['alertClosed', 'HumidityLow', at(90), '', 5],
    ]);
  });

  it('one alert per excursion and never two open for one device and kind; devices are separate', () => {
    const { changes } = run(
      [
        measure(0, { shockG: 6 }),
        measure(1, { shockG: 7 }),
        measure(2, { shockG: 8 }, 'd2'),
        measure(3, { shockG: 1 }),
        measure(4, { shockG: 9 }),
        measure(5, { shockG: 0 }),
        measure(6, { shockG: 0 }, 'd2'),
      ],
      opts,
    );
    const opened = changes.filter((c) => c.type === 'alertOpened');
    expect(opened.map((c) => c.key)).toEqual([`Shock/d1/${at(0)}`, `Shock/d2/${at(2)}`, `Shock/d1/${at(4)}`]);
    let open = 0;
    for (const c of changes) {
      if (c.type === 'alertOpened' && c.deviceId === 'd1') open++;
      if (c.type === 'alertClosed' && c.deviceId === 'd1') open--;
      expect(open).toBeLessThanOrEqual(1);
    }
  });

  it('reports a moved peak of an alert left open', () => {
    const first = run([measure(0, { shockG: 6 })], options({ conditions, latenessSeconds: 0 }));
    expect(first.changes.map((c) => c.type)).toEqual(['alertOpened']);
    const next = evaluate(first.state, [measure(5, { shockG: 9 }), measure(6, { shockG: 7 })], options({ conditions, latenessSeconds: 0 }));
    const last = settle(next.state, options({ conditions, latenessSeconds: 0 }));
    expect([...next.changes, ...last.changes]).toEqual([{ type: 'alertPeak', key: `Shock/d1/${at(0)}`, peakValue: 9 }]);
  });

  it('closes an open alert when its condition is removed, at the next reading', () => {
    const first = run([measure(0, { lightLux: 500 })], opts);
    const next = run([measure(10, { lightLux: 500 })], options({ conditions: {}, latenessSeconds: 0 }), first.state);
    expect(next.changes).toEqual([{ type: 'alertClosed', key: `Light/d1/${at(0)}`, kind: 'Light', deviceId: 'd1', endedAt: at(10), peakValue: 500 }]);
  });

  it('counts excursions as the union over devices, in event time, an open one up to the event time reached', () => {
    const { state } = run(
      [
        measure(0, { temperatureC: 9 }, 'a'),
        measure(10, { temperatureC: 9 }, 'b'),
        measure(20, { temperatureC: 5 }, 'a'),
        measure(40, { temperatureC: 5 }, 'b'), // 0..40 out: 40 s
        measure(100, { humidityPercent: 99 }, 'a'),
        measure(130, { temperatureC: 20 }, 'a'), // open from 130
        measure(150, { humidityPercent: 50 }, 'a'), // humidity 100..150: 50 s
        measure(160, { batteryPercent: 90 }, 'b'),
      ],
      opts,
    );
    expect(excursionsOf(state)).toEqual({ temperatureSeconds: 40 + 30, humiditySeconds: 50 });
  });

  it('closes every open alert of the shipment at the given moment, once', () => {
    const { state } = run([measure(0, { shockG: 9 }), measure(0, { lightLux: 900 }, 'd2')], opts);
    const closed = closeAlerts(state, at(2000));
    expect(closed.changes).toEqual([
      { type: 'alertClosed', key: `Shock/d1/${at(0)}`, kind: 'Shock', deviceId: 'd1', endedAt: at(2000), peakValue: 9 },
      { type: 'alertClosed', key: `Light/d2/${at(0)}`, kind: 'Light', deviceId: 'd2', endedAt: at(2000), peakValue: 900 },
    ]);
    expect(closeAlerts(closed.state, at(3000)).changes).toEqual([]);
  });
});

describe('SignalLoss', () => {
  const conditions: Conditions = { signalLoss: { maxSilenceSeconds: 300 } };

  it('is due maxSilenceSeconds after the newest receipt (or going InTransit), opens when due, and closes with the next reading', () => {
    const first = evaluate(null, [{ ...measure(0, { batteryPercent: 80 }), receivedAt: at(5) }], options({ conditions }));
    expect(signalLossDue(first.state, conditions, 'InTransit', at(-100))?.toISOString()).toBe(at(305));
    expect(signalLossDue(first.state, conditions, 'InTransit', at(100))?.toISOString()).toBe(at(400));
    expect(signalLossDue(first.state, conditions, 'Planned', at(-100))).toBeNull();
    expect(signalLossDue(first.state, {}, 'InTransit', at(-100))).toBeNull();
    expect(openSignalLoss(first.state, conditions, 'InTransit', at(-100), at(304)).changes).toEqual([]);
    const opened = openSignalLoss(first.state, conditions, 'InTransit', at(-100), at(310));
    expect(opened.changes).toEqual([
      { type: 'alertOpened', key: `SignalLoss/shipment/${at(305)}`, kind: 'SignalLoss', deviceId: null, startedAt: at(305), threshold: 300, peakValue: null },
    ]);
    // The timer firing again (another replica, a retry) opens nothing more.
    expect(openSignalLoss(opened.state, conditions, 'InTransit', at(-100), at(320)).changes).toEqual([]);
    expect(signalLossDue(opened.state, conditions, 'InTransit', at(-100))).toBeNull();
    // Any reading closes it, even one too old for decisions.
    const late = { ...measure(-5000, { batteryPercent: 80 }), receivedAt: at(900) };
    const next = evaluate(opened.state, [late], options({ conditions }));
    expect(next.ignored).toBe(1);
    expect(next.changes).toEqual([{ type: 'alertClosed', key: `SignalLoss/shipment/${at(305)}`, kind: 'SignalLoss', deviceId: null, endedAt: at(900), peakValue: null }]);
    expect(signalLossDue(next.state, conditions, 'InTransit', at(-100))?.toISOString()).toBe(at(1200));
  });

  it('closes with the shipment', () => {
    const opened = openSignalLoss(null, conditions, 'InTransit', at(0), at(1000));
    expect(closeAlerts(opened.state, at(2000)).changes).toEqual([
      { type: 'alertClosed', key: `SignalLoss/shipment/${at(300)}`, kind: 'SignalLoss', deviceId: null, endedAt: at(2000), peakValue: null },
    ]);
  });
});

describe('event time and per-device watermarks', () => {
  const arrival = { type: 'arrived', key: `warehouse/${at(0)}`, poiId: 'warehouse', arrivedAt: at(0) };

  it("a single device's arrival is published with the reading that confirms it (arrivedAt + dwell), not a lateness bound later", () => {
    const opts = options({ latenessSeconds: 300 });
    const first = evaluate(null, [position(0, 50), position(59, 50)], opts);
    expect(first.changes).toEqual([]);
    const second = evaluate(first.state, [position(60, 50)], opts);
    expect(second.changes).toEqual([arrival]);
    expect(second.state.devices).toEqual({ d1: { w: T0 + 60000, r: T0 + 60000 } });
  });

  it("a second device holds decisions back until its own watermark passes them, or until it is silent for the bound", () => {
    const opts = options({ latenessSeconds: 300 });
    // d2 reported at 0 and buffers; d1's readings confirm the arrival at 60.
    const first = evaluate(null, [measure(0, { batteryPercent: 50 }, 'd2'), position(0, 50), position(100, 50)], { ...opts, now: at(100) });
    expect(first.changes).toEqual([]);
    expect(first.state.horizon).toBe(T0 + 1);
    expect(settleDueAt(first.state, 300, at(100))?.toISOString()).toBe(at(300));
    // d2's buffer arrives, in its own order: its watermark passes 60.
    const buffered = evaluate(first.state, [measure(30, { batteryPercent: 50 }, 'd2'), measure(70, { batteryPercent: 50 }, 'd2')], { ...opts, now: at(110) });
    expect(buffered.changes).toEqual([arrival]);
    expect(buffered.late).toBe(0);
    // Or d2 stays silent: 300 s after its last receipt, it holds nothing back any more.
    expect(evaluate(first.state, [], { ...opts, now: at(299) }).changes).toEqual([]);
    const silent = evaluate(first.state, [], { ...opts, now: at(300) });
    expect(silent.changes).toEqual([arrival]);
    expect(settleDueAt(silent.state, 300, at(300))).toBeNull();
  });

  it('an assigned device that has not reported holds back from its assignment, for the bound', () => {
    const opts = options({ latenessSeconds: 300, assigned: [{ deviceId: 'd2', assignedAt: at(0) }] });
    const first = evaluate(null, [position(0, 50), position(100, 50)], { ...opts, now: at(100) });
    expect(first.changes).toEqual([]);
    expect(evaluate(first.state, [], { ...opts, now: at(300) }).changes).toEqual([arrival]);
  });

  it('buffered readings of a device in its own time order make a past visit with their true times', () => {
    const opts = options({ latenessSeconds: 1200 });
    const first = evaluate(null, [position(0, 5000, null, 'd2'), position(0, 5000), position(1000, 5000)], opts);
    const buffered = evaluate(first.state, [position(500, 50, null, 'd2'), position(700, 5000, null, 'd2')], opts);
    const done = settle(buffered.state, opts);
    expect(visits([...buffered.changes, ...done.changes])).toEqual([
      { type: 'arrived', key: `warehouse/${at(500)}`, poiId: 'warehouse', arrivedAt: at(500) },
      { type: 'departed', key: `warehouse/${at(500)}`, poiId: 'warehouse', arrivedAt: at(500), departedAt: at(700) },
    ]);
  });

  it("a reading older than its device's watermark is late: counted, and it changes nothing published", () => {
    const opts = options({ latenessSeconds: 60 });
    const first = evaluate(null, [position(0, 5000), position(1000, 5000)], opts);
    const late = evaluate(first.state, [position(500, 50), position(600, 50)], opts);
    expect(late.late).toBe(2);
    expect(late.ignored).toBe(2);
    expect(late.changes).toEqual([]);
    expect(late.state.pending).toEqual(first.state.pending);
  });

  it('a repeated reading counts once', () => {
    const opts = options({ latenessSeconds: 600 });
    const first = evaluate(null, [position(0, 50), position(0, 50)], opts);
    expect(first.ignored).toBe(1);
    expect(evaluate(first.state, [position(0, 50)], opts).ignored).toBe(1);
  });

  it('caps the readings retained: past the cap the oldest become final early', () => {
    const opts = options({ latenessSeconds: 100000, maxPending: 10 });
    // d2 holds the horizon at its reading at 0; d1's 1..24 are retained, 10 of them at most.
    const { state } = evaluate(null, [measure(0, { batteryPercent: 50 }, 'd2'), ...Array.from({ length: 25 }, (_, i) => measure(i, { batteryPercent: 50 }))], opts);
    expect(state.pending).toHaveLength(10);
    expect(state.horizon).toBe(T0 + 15000);
  });

  it('does not modify the state it is given, and its state survives JSON', () => {
    const opts = options({ conditions: { shock: { maxG: 1 } }, latenessSeconds: 10 });
    const first = evaluate(null, [position(0, 50), measure(5, { shockG: 3 })], opts);
    const frozen = JSON.stringify(first.state);
    const a = evaluate(first.state, [position(100, 50)], opts);
    expect(JSON.stringify(first.state)).toBe(frozen);
    const b = evaluate(JSON.parse(frozen) as GeofenceState, [position(100, 50)], opts);
    expect(b).toEqual(a);
  });

  it('tells when to evaluate and when to look again: when a device holding back retained readings turns silent', () => {
    expect(evaluationDueAt(at(10), 1000).toISOString()).toBe(at(11));
    const { state } = evaluate(null, [{ ...position(0, 50, null, 'd2'), receivedAt: at(3) }, position(100, 50)], options({ latenessSeconds: 600 }));
    expect(settleDueAt(state, 600)?.toISOString()).toBe(at(603));
    expect(settleDueAt(state, 600, at(603))).toBeNull(); // silent by then: it holds nothing back
    expect(settleDueAt(settle(state, options()).state, 600)).toBeNull();
    // A single device holds back nothing: its readings are final as they come.
    expect(settleDueAt(evaluate(null, [position(0, 50)], options()).state, 600)).toBeNull();
  });

  it('restores a stored state from the readings since its horizon without counting them late, and reads a version 1 state', () => {
    const opts = options({ latenessSeconds: 600 });
    const readings = [position(0, 5000, null, 'd2'), position(0, 50), position(100, 50)];
    const first = evaluate(null, readings, opts);
    const stored = JSON.parse(JSON.stringify(withoutPending(first.state))) as GeofenceState;
    const restored = restore(stored, readings.slice(1), opts);
    expect(restored).toMatchObject({ late: 0, changes: [], state: first.state });
    const { devices: _devices, ...v1 } = { ...stored, v: 1 as const };
    const fromV1 = restore(v1 as GeofenceState, readings.slice(1), opts);
    expect(fromV1.state.v).toBe(2);
    expect(fromV1.state.devices).toEqual({ d1: { w: T0 + 100000, r: T0 + 100000 } });
  });
});

describe('releases in event time', () => {
  const release = (seconds: number, deviceId: string): GeofenceReading => ({ deviceId, recordedAt: at(seconds), receivedAt: at(seconds), release: true });
  const lateness = options({ conditions: { temperature: { maxC: 8 } } });

  it('folds a release at its time: a late reading from before it counts, one from after it changes nothing', () => {
    // d2 holds the horizon at 0; d1 inside from 10 s, released at 200 s.
    const first = evaluate(null, [position(0, 2000, null, 'd2'), position(0, 2000), position(10, 50), position(100, 50), release(200, 'd1')], lateness);
    expect(visits(first.changes)).toEqual([]);
    // d1's reading recorded at 150 s comes after its release: it left then. One recorded at 250 s changes nothing.
    const late = evaluate(first.state, [position(150, 2000), position(250, 50)], lateness);
    expect(late.ignored).toBe(1);
    const { changes } = run([position(400, 2000, null, 'd2')], lateness, late.state);
    expect(visits(changes)).toEqual([
      { type: 'arrived', key: `warehouse/${at(10)}`, poiId: 'warehouse', arrivedAt: at(10) },
      { type: 'departed', key: `warehouse/${at(10)}`, poiId: 'warehouse', arrivedAt: at(10), departedAt: at(150) },
    ]);
  });

  it('a released device leaves the places: the departure starts at the release unless another device is inside', () => {
    const alone = run([position(0, 2000), position(10, 50), position(100, 50), release(200, 'd1'), position(300, 2000, null, 'd2')]);
    expect(visits(alone.changes)[1]).toMatchObject({ type: 'departed', departedAt: at(200) });
    // A tracker swap: d2 is inside before d1's release, then leaves at 250 s.
    const swap = run([position(0, 2000), position(10, 50), position(100, 50), position(150, 50, null, 'd2'), release(200, 'd1'), position(250, 2000, null, 'd2'), position(400, 2000, null, 'd2')]);
    expect(visits(swap.changes)).toEqual([
      { type: 'arrived', key: `warehouse/${at(10)}`, poiId: 'warehouse', arrivedAt: at(10) },
      { type: 'departed', key: `warehouse/${at(10)}`, poiId: 'warehouse', arrivedAt: at(10), departedAt: at(250) },
    ]);
  });

  it("ends the released device's open alerts at the release, or at its newest reading when its clock ran ahead", () => {
    const ended = run([measure(0, { temperatureC: 10 }), measure(5, { temperatureC: 12 }), release(20, 'd1')], lateness);
    expect(alerts(ended.changes).filter((c) => c.type === 'alertClosed')).toEqual([
      { type: 'alertClosed', key: `TemperatureHigh/d1/${at(0)}`, kind: 'TemperatureHigh', deviceId: 'd1', endedAt: at(20), peakValue: 12 },
    ]);
    const ahead = run([measure(0, { temperatureC: 10 }), measure(30, { temperatureC: 12 }), release(20, 'd1')], lateness);
    expect(alerts(ahead.changes).filter((c) => c.type === 'alertClosed')).toMatchObject([{ endedAt: at(30) }]);
  });

  it('a released device holds back nothing, and its release survives a restore', () => {
    const held = evaluate(null, [position(0, 2000, null, 'd2'), position(0, 50), position(100, 50), release(100, 'd1')], options());
    expect(held.state.horizon).toBe(T0 + 1);
    expect(settleDueAt(held.state, 600, T0)).toEqual(new Date(T0 + 600_000));
    // Stored without its retained entries and restored from the readings since the horizon: the release is kept.
    const stored = JSON.parse(JSON.stringify(withoutPending(held.state))) as GeofenceState;
    const restored = restore(stored, [position(0, 50), position(100, 50)], options());
    const a = evaluate(held.state, [position(300, 2000, null, 'd2'), position(500, 2000, null, 'd2')], options());
    const b = evaluate(restored.state, [position(300, 2000, null, 'd2'), position(500, 2000, null, 'd2')], options());
    expect(b.changes).toEqual(a.changes);
    expect(visits(a.changes)).toMatchObject([{ type: 'arrived', arrivedAt: at(0) }, { type: 'departed', departedAt: at(100) }]);
  });
});
