import { foldTrack } from './eta/track.js';
import { OUTSIDE_FACTOR, type PlaceIndex } from './place-index.js';
import type {
  AlertKind,
  AlertTrack,
  Conditions,
  Excursions,
  ExcursionTrack,
  GeofenceChange,
  GeofenceReading,
  GeofenceState,
  Instant,
  Sample,
  ShipmentStatus,
} from './types.js';

/** Default cap on the readings a state retains; past it the oldest become final early. */
export const DEFAULT_MAX_PENDING = 20000;

export interface EvaluationOptions {
  /** The account's points of interest. */
  places: PlaceIndex;
  conditions: Conditions | null;
  status: ShipmentStatus;
  /**
   * EVALUATION_LATENESS_SECONDS: a device silent that long in server time (since its last reading's
   * receipt, or its assignment if later) no longer holds back what the others' readings decide.
   */
  latenessSeconds: number;
  /** Server time of the evaluation, for the devices' silence (default: the newest receipt the state knows). */
  now?: Instant;
  /**
   * The devices assigned to the shipment, with the start of their assignment (server time). One not yet
   * known starts with its watermark just before that start and holds back the others from then on, until
   * it reports or is silent for the bound. Devices not listed are learned from their first reading.
   */
  assigned?: readonly { deviceId: string; assignedAt: Instant }[];
  /** Cap on retained readings (default DEFAULT_MAX_PENDING). */
  maxPending?: number;
}

export interface EvaluationResult {
  state: GeofenceState;
  /** What became final in this evaluation, in event-time order: publish each exactly once. */
  changes: GeofenceChange[];
  /** Readings given that were ignored for decisions: older than the horizon, or repeated. */
  ignored: number;
  /**
   * Readings given that were late: recorded before their own device's watermark as it was before this
   * evaluation (repeats included). Those at or after the horizon still count for what is not published.
   */
  late: number;
  excursions: Excursions;
}

export function toMillis(at: Instant): number {
  const ms = typeof at === 'number' ? at : typeof at === 'string' ? Date.parse(at) : at.getTime();
  if (!Number.isFinite(ms)) throw new RangeError(`Not a timestamp: ${String(at)}`);
  return ms;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * A copy to work on: retained samples are never mutated (the array is replaced, never changed in
 * place), so they are shared rather than copied, which keeps an evaluation's cost independent of them.
 */
function copyState(state: GeofenceState): GeofenceState {
  const copy: GeofenceState = { ...structuredClone({ ...state, pending: [] }), pending: state.pending };
  // A version 1 state (stored before per-device watermarks) knows no device yet: they are learned again
  // from the readings restored with it and from the next ones.
  copy.devices ??= {};
  copy.v = 2;
  return copy;
}

export function initialState(): GeofenceState {
  return {
    v: 2,
    horizon: null,
    watermark: null,
    devices: {},
    clock: null,
    lastReceivedAt: null,
    pending: [],
    inside: {},
    places: {},
    alerts: {},
    temperature: { totalMs: 0, out: [], since: null },
    humidity: { totalMs: 0, out: [], since: null },
    signalLoss: null,
  };
}

/**
 * The state without its retained readings, for storing: they can be read back from the readings
 * store, since the retained readings are exactly the shipment's stored readings recorded at or after
 * `horizon` (a reading so recorded was accepted whenever it arrived: the horizon only moves forward).
 * To restore, pass those readings to `restore` with the stored state: they are accepted again (the
 * devices' watermarks were stored, so they are not late), and the outcome is the same as if they had
 * never left.
 */
export function withoutPending(state: GeofenceState): GeofenceState {
  return { ...state, pending: [] };
}

/** When the service should evaluate a shipment: EVALUATION_DELAY_MS after its newest ingested reading. */
export function evaluationDueAt(newestIngestedAt: Instant, delayMs: number): Date {
  return new Date(toMillis(newestIngestedAt) + delayMs);
}

/**
 * When the service should evaluate the shipment again if no reading arrives meanwhile: the first moment
 * after `now` at which a device that holds back retained readings (its watermark behind the newest) has
 * been silent for the lateness bound, so that the others' readings become final without it. Null when
 * nothing is retained, or no device holds anything back.
 */
export function settleDueAt(state: GeofenceState, latenessSeconds: number, now?: Instant): Date | null {
  if (state.pending.length === 0 || state.watermark === null) return null;
  const after = now === undefined ? -Infinity : toMillis(now);
  let due: number | null = null;
  for (const device of Object.values(state.devices ?? {})) {
    if (device.w >= state.watermark || device.end !== undefined) continue;
    const silentAt = device.r + latenessSeconds * 1000;
    if (silentAt > after && (due === null || silentAt < due)) due = silentAt;
  }
  return due === null ? null : new Date(due);
}

/**
 * The publish horizon the devices allow at server time `now`: just after the least watermark of the
 * devices not silent for the bound (everything up to it is in hand, as each device sends in its own time
 * order), or after the newest watermark when every device is silent. -Infinity when no device is known.
 */
function publishHorizon(state: GeofenceState, now: number | null, latenessSeconds: number): number {
  let least = Infinity;
  let newest = -Infinity;
  for (const device of Object.values(state.devices)) {
    newest = Math.max(newest, device.w);
    // A released device's stream is complete: it holds nothing back.
    if (device.end !== undefined) continue;
    if (now === null || now - device.r < latenessSeconds * 1000) least = Math.min(least, device.w);
  }
  return (least === Infinity ? newest : least) + 1;
}

/** (recordedAt, deviceId) order; a device's release marker after its reading of the same instant. */
const compareSamples = (a: Sample, b: Sample): number => a.t - b.t || (a.d < b.d ? -1 : a.d > b.d ? 1 : 0) || (a.x ?? 0) - (b.x ?? 0);

function toSample(reading: GeofenceReading, t: number): Sample {
  const s: Sample = { t, d: reading.deviceId };
  const loc = reading.location;
  if (loc && Number.isFinite(loc.lat) && Number.isFinite(loc.lng)) {
    s.lat = loc.lat;
    s.lng = loc.lng;
    if (loc.accuracyMeters != null && loc.accuracyMeters > 0) s.acc = loc.accuracyMeters;
  }
  if (reading.temperatureC != null) s.tc = reading.temperatureC;
  if (reading.humidityPercent != null) s.hu = reading.humidityPercent;
  if (reading.shockG != null) s.sh = reading.shockG;
  if (reading.lightLux != null) s.lx = reading.lightLux;
  if (reading.batteryPercent != null) s.bt = reading.batteryPercent;
  return s;
}

/**
 * Evaluates one shipment: takes the readings ingested since the last evaluation, moves their devices'
 * watermarks, ignores those recorded before the horizon, and makes final (folds) every retained reading
 * recorded up to the new publish horizon (the least watermark of the devices not silent for the
 * lateness bound at `options.now`), in (recordedAt, deviceId) order. The changes returned are exactly the
 * decisions that became final; none can be returned again by any later call on the state returned (see
 * docs/geofence-evaluation.md). The given state is not modified.
 */
export function evaluate(previous: GeofenceState | null, readings: readonly GeofenceReading[], options: EvaluationOptions): EvaluationResult {
  return evaluateReadings(previous, readings, options, false);
}

/**
 * Restores a state stored with `withoutPending`: `readings` are the shipment's stored readings recorded at
 * or after its horizon (those it retained, and any not evaluated yet). As `evaluate`, except that readings
 * the stored watermarks already cover are not counted late and do not end SignalLoss (they were taken in
 * before).
 */
export function restore(stored: GeofenceState, readings: readonly GeofenceReading[], options: EvaluationOptions): EvaluationResult {
  return evaluateReadings(stored, readings, options, true);
}

function evaluateReadings(previous: GeofenceState | null, readings: readonly GeofenceReading[], options: EvaluationOptions, restoring: boolean): EvaluationResult {
  const state = copyState(previous ?? initialState());
  for (const { deviceId, assignedAt } of options.assigned ?? []) {
    if (state.devices[deviceId]) continue;
    const since = toMillis(assignedAt);
    state.devices[deviceId] = { w: since - 1, r: since };
  }
  const run = new Run(state, options);
  let ignored = 0;
  let late = 0;
  let firstReceipt: number | null = null;
  /** The devices' watermarks before this evaluation: lateness does not depend on the order within a batch. */
  const watermarks = new Map<string, number>();
  const accepted: Sample[] = [];
  if (restoring) {
    // The stored state keeps its devices' releases, not the markers it retained: the releases not folded yet
    // (at or after the horizon) are retained again.
    for (const [deviceId, device] of Object.entries(state.devices)) {
      if (device.end === undefined || (state.horizon !== null && device.end < state.horizon)) continue;
      if (!state.pending.some((s) => s.x === 1 && s.d === deviceId)) accepted.push({ t: device.end, d: deviceId, x: 1 });
    }
  }
  for (const reading of readings) {
    const t = toMillis(reading.recordedAt);
    const received = toMillis(reading.receivedAt);
    const released = state.devices[reading.deviceId]?.end;
    if (reading.release === true) {
      if (released !== undefined) {
        ignored++;
        continue;
      }
      accepted.push(releaseOf(state, reading.deviceId, t, received));
      continue;
    }
    // A released device's readings recorded from its release on change nothing.
    if (released !== undefined && t >= released) {
      ignored++;
      continue;
    }
    state.lastReceivedAt = state.lastReceivedAt === null ? received : Math.max(state.lastReceivedAt, received);
    const device = state.devices[reading.deviceId];
    let before = watermarks.get(reading.deviceId);
    if (before === undefined) watermarks.set(reading.deviceId, (before = device?.w ?? -Infinity));
    if (!restoring && t < before) late++;
    // Any new reading ends SignalLoss; on a restore, those the watermark covers were taken in before.
    if (!restoring || t > before) firstReceipt = firstReceipt === null ? received : Math.min(firstReceipt, received);
    if (device) {
      device.w = Math.max(device.w, t);
      device.r = Math.max(device.r, received);
    } else {
      state.devices[reading.deviceId] = { w: t, r: received };
    }
    if (state.horizon !== null && t < state.horizon) {
      ignored++;
      continue;
    }
    accepted.push(toSample(reading, t));
  }
  // The next reading closes SignalLoss, whenever it was recorded (silence is measured in server time).
  if (state.signalLoss !== null && firstReceipt !== null) {
    run.changes.push({
      type: 'alertClosed',
      key: alertKey('SignalLoss', null, state.signalLoss),
      kind: 'SignalLoss',
      deviceId: null,
      endedAt: iso(Math.max(state.signalLoss, firstReceipt)),
      peakValue: null,
    });
    state.signalLoss = null;
  }
  if (accepted.length > 0) {
    accepted.sort(compareSamples);
    const tail = state.pending[state.pending.length - 1];
    // In the usual case every new reading is newer than those retained: append, no merge.
    const merged = tail === undefined || compareSamples(tail, accepted[0]) < 0 ? accepted : state.pending.concat(accepted).sort(compareSamples);
    const unique: Sample[] = merged === accepted ? state.pending.slice() : [];
    for (const s of merged) {
      const last = unique[unique.length - 1];
      // One (device, recordedAt) is one reading (API.md: a resend with the same content is a duplicate).
      if (last && last.t === s.t && last.d === s.d && last.x === s.x) ignored++;
      else unique.push(s);
    }
    state.pending = unique;
    const newest = unique[unique.length - 1].t;
    state.watermark = state.watermark === null ? newest : Math.max(state.watermark, newest);
  }
  if (state.watermark !== null) {
    const now = options.now === undefined ? state.lastReceivedAt : toMillis(options.now);
    let horizon = Math.max(state.horizon ?? -Infinity, publishHorizon(state, now, options.latenessSeconds));
    const max = options.maxPending ?? DEFAULT_MAX_PENDING;
    if (state.pending.length > max) horizon = Math.max(horizon, state.pending[state.pending.length - max].t);
    run.foldUntil(horizon);
  }
  return { state, changes: run.finish(), ignored, late, excursions: excursionsOf(state) };
}

/**
 * The release marker of a device at `t` (server time of the release), as a retained entry: at `t`, or at
 * the device's newest reading if its clock ran ahead of the release (what those readings decide stands),
 * or at the horizon if that passed it already (it cannot fold before what is published). From then on the
 * device holds back nothing and its readings recorded at or after its release are ignored.
 */
function releaseOf(state: GeofenceState, deviceId: string, t: number, received: number): Sample {
  let device = state.devices[deviceId];
  if (!device) device = state.devices[deviceId] = { w: t - 1, r: received };
  const end = Math.max(t, device.w);
  device.end = end;
  device.w = end;
  return { t: state.horizon === null ? end : Math.max(end, state.horizon), d: deviceId, x: 1 };
}

/**
 * Makes everything retained final, as if every device had been silent for the lateness bound: the
 * service calls it before closing the shipment. Later readings recorded at or before the newest one
 * evaluated are ignored.
 */
export function settle(previous: GeofenceState, options: EvaluationOptions): EvaluationResult {
  const state = copyState(previous);
  const run = new Run(state, options);
  if (state.watermark !== null) run.foldUntil(state.watermark + 1);
  return { state, changes: run.finish(), ignored: 0, late: 0, excursions: excursionsOf(state) };
}

/**
 * SignalLoss timer: when the alert becomes due (the newest receipt, or the moment the shipment went
 * InTransit if later, plus maxSilenceSeconds), which is also its `startedAt`. Null when no timer should
 * run: no condition, not InTransit, or the alert is already open.
 */
export function signalLossDue(state: GeofenceState | null, conditions: Conditions | null, status: ShipmentStatus, inTransitSince: Instant): Date | null {
  const maxSilence = conditions?.signalLoss?.maxSilenceSeconds;
  if (maxSilence == null || status !== 'InTransit' || (state?.signalLoss ?? null) !== null) return null;
  const since = Math.max(state?.lastReceivedAt ?? -Infinity, toMillis(inTransitSince));
  return new Date(since + maxSilence * 1000);
}

/** The timer fired: opens SignalLoss when it is due at `now` (otherwise changes nothing). */
export function openSignalLoss(
  previous: GeofenceState | null,
  conditions: Conditions | null,
  status: ShipmentStatus,
  inTransitSince: Instant,
  now: Instant,
): { state: GeofenceState; changes: GeofenceChange[] } {
  const state = copyState(previous ?? initialState());
  const due = signalLossDue(state, conditions, status, inTransitSince);
  const maxSilence = conditions?.signalLoss?.maxSilenceSeconds;
  if (due === null || maxSilence == null || due.getTime() > toMillis(now)) return { state, changes: [] };
  state.signalLoss = due.getTime();
  return {
    state,
    changes: [
      {
        type: 'alertOpened',
        key: alertKey('SignalLoss', null, state.signalLoss),
        kind: 'SignalLoss',
        deviceId: null,
        startedAt: iso(state.signalLoss),
        threshold: maxSilence,
        peakValue: null,
      },
    ],
  };
}

/**
 * Closes every open alert of the shipment at `at` (server time: it closes), SignalLoss included, and
 * forgets what its alerts were waiting for. Pending readings are not folded: call `settle` first to keep
 * them. (A device's release is a marker folded in event time: `Run.release`.)
 */
export function closeAlerts(previous: GeofenceState, at: Instant): { state: GeofenceState; changes: GeofenceChange[] } {
  const state = copyState(previous);
  const endedAt = iso(toMillis(at));
  const changes: GeofenceChange[] = [];
  for (const [key, track] of Object.entries(state.alerts)) {
    if (track.open) {
      changes.push({ type: 'alertClosed', key: alertKey(track.kind, track.deviceId, track.startedAt), kind: track.kind, deviceId: track.deviceId, endedAt, peakValue: track.peak });
    }
    delete state.alerts[key];
  }
  if (state.signalLoss !== null) {
    changes.push({ type: 'alertClosed', key: alertKey('SignalLoss', null, state.signalLoss), kind: 'SignalLoss', deviceId: null, endedAt, peakValue: null });
    state.signalLoss = null;
  }
  return { state, changes };
}

/** The excursion totals at the event time the folded state has reached (open excursions counted to it). */
export function excursionsOf(state: GeofenceState): Excursions {
  const total = (track: ExcursionTrack): number =>
    (track.totalMs + (track.since !== null && state.clock !== null ? state.clock - track.since : 0)) / 1000;
  return { temperatureSeconds: total(state.temperature), humiditySeconds: total(state.humidity) };
}

export function alertKey(kind: AlertKind, deviceId: string | null, startedAt: number): string {
  return `${kind}/${deviceId ?? 'shipment'}/${iso(startedAt)}`;
}

function setOut(track: ExcursionTrack, deviceId: string, out: boolean, t: number): void {
  const index = track.out.indexOf(deviceId);
  if (out && index < 0) {
    if (track.out.length === 0) track.since = t;
    track.out.push(deviceId);
  } else if (!out && index >= 0) {
    track.out.splice(index, 1);
    if (track.out.length === 0 && track.since !== null) {
      track.totalMs += t - track.since;
      track.since = null;
    }
  }
}

interface RangeRule {
  kind: AlertKind;
  field: 'tc' | 'hu' | 'sh' | 'lx' | 'bt';
  /** The bound, or null when the condition does not set it (every value is then in range). */
  threshold: number | null;
  high: boolean;
  minDurationMs: number;
}

function rulesOf(conditions: Conditions | null): RangeRule[] {
  const c = conditions ?? {};
  const ms = (seconds: number | null | undefined): number => (seconds ?? 0) * 1000;
  return [
    { kind: 'TemperatureHigh', field: 'tc', threshold: c.temperature?.maxC ?? null, high: true, minDurationMs: ms(c.temperature?.minDurationSeconds) },
    { kind: 'TemperatureLow', field: 'tc', threshold: c.temperature?.minC ?? null, high: false, minDurationMs: ms(c.temperature?.minDurationSeconds) },
    { kind: 'HumidityHigh', field: 'hu', threshold: c.humidity?.maxPercent ?? null, high: true, minDurationMs: ms(c.humidity?.minDurationSeconds) },
    { kind: 'HumidityLow', field: 'hu', threshold: c.humidity?.minPercent ?? null, high: false, minDurationMs: ms(c.humidity?.minDurationSeconds) },
    { kind: 'Shock', field: 'sh', threshold: c.shock?.maxG ?? null, high: true, minDurationMs: 0 },
    { kind: 'Light', field: 'lx', threshold: c.light?.maxLux ?? null, high: true, minDurationMs: 0 },
    { kind: 'BatteryLow', field: 'bt', threshold: c.battery?.minPercent ?? null, high: false, minDurationMs: 0 },
  ];
}

const outOfRange = (rule: RangeRule, value: number): boolean =>
  rule.threshold !== null && (rule.high ? value > rule.threshold : value < rule.threshold);

/** One fold over a state: applies final readings in order and collects the changes they make. */
class Run {
  readonly changes: GeofenceChange[] = [];
  private readonly rules: RangeRule[];
  private readonly ruleByKind: Map<AlertKind, RangeRule>;
  private readonly peaks = new Map<string, number>();

  constructor(
    private readonly state: GeofenceState,
    private readonly options: EvaluationOptions,
  ) {
    this.rules = rulesOf(options.conditions);
    this.ruleByKind = new Map(this.rules.map((r) => [r.kind, r]));
    // A place removed from the account is forgotten (its open visit gets no departure).
    for (const poiId of Object.keys(state.places)) if (!options.places.get(poiId)) delete state.places[poiId];
    for (const [deviceId, list] of Object.entries(state.inside)) {
      const kept = list.filter((poiId) => options.places.get(poiId));
      if (kept.length !== list.length) state.inside[deviceId] = kept;
    }
  }

  /** Applies every retained reading recorded before `horizon`, then moves the clock to it. */
  foldUntil(horizon: number): void {
    const state = this.state;
    let n = 0;
    while (n < state.pending.length && state.pending[n].t < horizon) {
      const sample = state.pending[n++];
      this.advance(sample.t);
      this.apply(sample);
      this.advance(sample.t);
    }
    if (n > 0) state.pending = state.pending.slice(n);
    // No accepted reading can be recorded before the horizon any more, and a newer one was seen: the
    // shipment's event time has passed it with nothing happening in between.
    const reached = state.watermark === null ? horizon : Math.min(horizon, state.watermark);
    this.advance(reached);
    state.horizon = Math.max(state.horizon ?? -Infinity, horizon);
  }

  finish(): GeofenceChange[] {
    for (const [key, peak] of this.peaks) this.changes.push({ type: 'alertPeak', key, peakValue: peak });
    return this.changes;
  }

  /** Event time reaches `t`: every dwell and minimum duration that ended by then is decided. */
  private advance(t: number): void {
    const state = this.state;
    if (state.clock !== null && t < state.clock) return;
    state.clock = t;
    for (const [poiId, place] of Object.entries(state.places)) {
      const poi = this.options.places.get(poiId);
      if (place.since === null || !poi) continue;
      const dwellMs = poi.dwellSeconds * 1000;
      if (place.since + dwellMs > t) continue;
      if (place.arrivedAt === null) {
        place.arrivedAt = place.since;
        place.since = null;
        this.changes.push({ type: 'arrived', key: visitKey(poiId, place.arrivedAt), poiId, arrivedAt: iso(place.arrivedAt) });
      } else {
        this.changes.push({ type: 'departed', key: visitKey(poiId, place.arrivedAt), poiId, arrivedAt: iso(place.arrivedAt), departedAt: iso(place.since) });
        delete state.places[poiId];
      }
    }
    for (const track of Object.values(state.alerts)) {
      if (track.open) continue;
      const rule = this.ruleByKind.get(track.kind);
      if (!rule || rule.threshold === null || track.startedAt + rule.minDurationMs > t) continue;
      track.open = true;
      this.changes.push({
        type: 'alertOpened',
        key: alertKey(track.kind, track.deviceId, track.startedAt),
        kind: track.kind,
        deviceId: track.deviceId,
        startedAt: iso(track.startedAt),
        threshold: rule.threshold,
        peakValue: track.peak,
      });
    }
  }

  private apply(s: Sample): void {
    if (s.x === 1) {
      this.release(s.d, s.t);
      return;
    }
    if (s.lat !== undefined && s.lng !== undefined) this.applyPosition(s, s.lat, s.lng);
    const state = this.state;
    for (const rule of this.rules) {
      const value = s[rule.field];
      if (value === undefined) continue;
      const key = `${s.d}/${rule.kind}`;
      const track: AlertTrack | undefined = state.alerts[key];
      if (outOfRange(rule, value)) {
        if (!track) {
          state.alerts[key] = { kind: rule.kind, deviceId: s.d, open: false, startedAt: s.t, peak: value };
        } else if (rule.high ? value > track.peak : value < track.peak) {
          track.peak = value;
          if (track.open) this.peaks.set(alertKey(track.kind, track.deviceId, track.startedAt), value);
        }
      } else if (track) {
        if (track.open) {
          const key2 = alertKey(track.kind, track.deviceId, track.startedAt);
          this.peaks.delete(key2);
          this.changes.push({ type: 'alertClosed', key: key2, kind: track.kind, deviceId: track.deviceId, endedAt: iso(s.t), peakValue: track.peak });
        }
        delete state.alerts[key];
      }
    }
    // The temperature rules are the only ones on `tc`, the humidity rules the only ones on `hu`.
    const tc = s.tc;
    const hu = s.hu;
    if (tc !== undefined) setOut(state.temperature, s.d, this.rules.some((r) => r.field === 'tc' && outOfRange(r, tc)), s.t);
    if (hu !== undefined) setOut(state.humidity, s.d, this.rules.some((r) => r.field === 'hu' && outOfRange(r, hu)), s.t);
  }

  private applyPosition(s: Sample, lat: number, lng: number): void {
    const state = this.state;
    const track = foldTrack(state.track, s.t, lat, lng, s.acc);
    if (track !== undefined) state.track = track;
    const accuracy = s.acc ?? 0;
    const before = state.inside[s.d] ?? [];
    const after: string[] = [];
    for (const { place, distanceMeters } of this.options.places.candidates(lat, lng, accuracy)) {
      const wasInside = before.includes(place.id);
      if (distanceMeters + accuracy <= place.radiusMeters) after.push(place.id);
      else if (wasInside && !(distanceMeters - accuracy > place.radiusMeters * OUTSIDE_FACTOR)) after.push(place.id);
    }
    // A place that is not a candidate is one the position is definitively outside of.
    if (after.length > 0) state.inside[s.d] = after;
    else delete state.inside[s.d];
    const changed = new Set<string>();
    for (const id of before) if (!after.includes(id)) changed.add(id);
    for (const id of after) if (!before.includes(id)) changed.add(id);
    for (const poiId of changed) this.placeChanged(poiId, s.t);
  }

  /**
   * The device is released at `t`: its open alerts end at `t` (those waiting for their minimum duration
   * are dropped), it leaves the excursions and the places it was inside of (a place it alone kept the
   * shipment inside of starts its departure at `t`; the other devices' positions decide from then on).
   */
  private release(deviceId: string, t: number): void {
    const state = this.state;
    for (const [key, track] of Object.entries(state.alerts)) {
      if (track.deviceId !== deviceId) continue;
      if (track.open) {
        const alert = alertKey(track.kind, track.deviceId, track.startedAt);
        this.peaks.delete(alert);
        this.changes.push({ type: 'alertClosed', key: alert, kind: track.kind, deviceId, endedAt: iso(t), peakValue: track.peak });
      }
      delete state.alerts[key];
    }
    for (const track of [state.temperature, state.humidity]) if (track.out.includes(deviceId)) setOut(track, deviceId, false, t);
    const places = state.inside[deviceId] ?? [];
    delete state.inside[deviceId];
    for (const poiId of places) this.placeChanged(poiId, t);
  }

  /** Some device went inside or outside of the place at `t`: the shipment's side of it, from every device. */
  private placeChanged(poiId: string, t: number): void {
    const state = this.state;
    const inside = Object.values(state.inside).some((list) => list.includes(poiId));
    const place = state.places[poiId] ?? { inside: false, arrivedAt: null, since: null };
    if (place.inside === inside) return;
    place.inside = inside;
    if (place.arrivedAt === null) place.since = inside ? t : null;
    else place.since = inside ? null : t;
    if (!place.inside && place.arrivedAt === null && place.since === null) delete state.places[poiId];
    else state.places[poiId] = place;
  }
}

export function visitKey(poiId: string, arrivedAt: number): string {
  return `${poiId}/${iso(arrivedAt)}`;
}
