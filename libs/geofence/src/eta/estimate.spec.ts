import { describe, expect, it } from 'vitest';
import { estimateArrival, etaMovedEnough, type LaneStats, laneTripOf } from './estimate.js';
import { foldTrack, type TrackStats } from './track.js';

const M_PER_DEG = 111_195;
const start = { lat: 47, lng: 5 };
const north = (meters: number) => ({ lat: start.lat + meters / M_PER_DEG, lng: start.lng });
const destination = { ...north(100_000), radiusMeters: 500 };

/** Folds positions `[seconds, metres north]` in order. */
function trackOf(points: [number, number][]): TrackStats | undefined {
  let track: TrackStats | undefined;
  for (const [seconds, meters] of points) {
    const p = north(meters);
    track = foldTrack(track, seconds * 1000, p.lat, p.lng, 5);
  }
  return track;
}
/** Driving at `speed` m/s from `from` metres, a fix every 60 s, from `t` seconds, `n` fixes. */
const drive = (t: number, from: number, speed: number, n: number): [number, number][] => Array.from({ length: n }, (_, i) => [t + i * 60, from + speed * 60 * i]);

describe('estimateArrival', () => {
  it('uses the plan until the truck first moves, and nothing without plan or position', () => {
    expect(estimateArrival({ destination, origin: null, plannedArrivalAt: null, track: undefined, lane: null })).toBeNull();
    const planned = estimateArrival({ destination, origin: null, plannedArrivalAt: 5_000_000, track: trackOf([[0, 0], [600, 0]]), lane: null });
    expect(planned).toEqual({ arrivalAt: 5_000_000, earliestAt: 5_000_000, latestAt: 5_000_000, remainingMeters: null, basis: 'Planned', asOf: null });
  });

  it('learns the speed from moving time only: a stop adds its length to the clock, not to the time still to go', () => {
    const steady = trackOf(drive(0, 0, 20, 31)); // 36 km in 30 min
    const stopping = trackOf([...drive(0, 0, 20, 16), ...Array.from({ length: 30 }, (_, i): [number, number] => [960 + i * 60, 18_000]), ...drive(2760, 18_000, 20, 16)]);
    const a = estimateArrival({ destination, origin: null, plannedArrivalAt: null, track: steady, lane: null });
    const b = estimateArrival({ destination, origin: null, plannedArrivalAt: null, track: stopping, lane: null });
    expect(a?.basis).toBe('Position');
    expect(b?.remainingMeters).toBe(a?.remainingMeters);
    // Stopped from the last fix before the stop (900 s) to the first moving one after it (2760 s).
    expect(stopping?.st).toBe(1860_000);
    const left = (e: typeof a) => (e ? e.arrivalAt - (e.asOf ?? 0) : NaN);
    // The 31 min stop (a break) adds no time ahead; the average speed with it would add half again.
    expect(Math.abs(left(b) - left(a)) / left(a)).toBeLessThan(0.05);
  });

  it('keeps the range at least ±10 % of the remaining time, narrowing toward the destination', () => {
    const far = estimateArrival({ destination, origin: null, plannedArrivalAt: null, track: trackOf(drive(0, 0, 20, 20)), lane: null });
    const near = estimateArrival({ destination, origin: null, plannedArrivalAt: null, track: trackOf(drive(0, 0, 20, 80)), lane: null });
    for (const e of [far, near]) {
      if (!e || e.asOf === null) throw new Error('no estimate');
      const remaining = e.arrivalAt - e.asOf;
      expect(e.arrivalAt - e.earliestAt).toBeGreaterThanOrEqual(Math.floor(0.1 * remaining));
      expect(e.latestAt - e.arrivalAt).toBeGreaterThanOrEqual(Math.floor(0.1 * remaining));
    }
    expect((near?.latestAt ?? 0) - (near?.earliestAt ?? 0)).toBeLessThan((far?.latestAt ?? 0) - (far?.earliestAt ?? 0));
  });

  it('plans a 45 min break per 4.5 h of driving ahead', () => {
    const long = { ...north(600_000), radiusMeters: 500 };
    const track = trackOf(drive(0, 0, 22, 61)); // an hour at 79 km/h
    const e = estimateArrival({ destination: long, origin: null, plannedArrivalAt: null, track, lane: null });
    const noBreak = estimateArrival({ destination: { ...north(100_000), radiusMeters: 500 }, origin: null, plannedArrivalAt: null, track, lane: null });
    if (!e || !noBreak || !track) throw new Error('no estimate');
    // ~7.5 h of driving ahead (with the detour), after 1 h driven: one break.
    const moving = e.arrivalAt - track.t;
    expect(moving).toBeGreaterThan(7 * 3600_000);
    expect(noBreak.arrivalAt - track.t).toBeLessThan(3 * 3600_000);
  });

  it('takes History from 3 trips of the lane, with the lane detour in remainingMeters', () => {
    const trip = { detour: 1.2, speed: 20, stopRatio: 0.1, pace: 0.06 };
    const lane: LaneStats = { n: 0, detour: [0, 0], speed: [0, 0], stopRatio: [0, 0], pace: [0, 0] };
    const track = trackOf(drive(0, 0, 20, 11));
    for (let i = 0; i < 3; i++) {
      expect(estimateArrival({ destination, origin: start, plannedArrivalAt: null, track, lane })?.basis).toBe('Position');
      lane.n++;
      for (const key of ['detour', 'speed', 'stopRatio', 'pace'] as const) {
        lane[key][0] += trip[key];
        lane[key][1] += trip[key] ** 2;
      }
    }
    const e = estimateArrival({ destination, origin: start, plannedArrivalAt: null, track, lane });
    expect(e?.basis).toBe('History');
    const direct = 100_000 - 500 - 12_000;
    expect(e?.remainingMeters).toBeCloseTo(direct * 1.2, -1);
    // 20 m/s, 10 % stops: (105 km / 20 m/s) * 1.1, less half a typical stop (the prior's 3 min: the track has had none).
    expect((e?.arrivalAt ?? 0) - (e?.asOf ?? 0)).toBeCloseTo(((direct * 1.2) / 20) * 1.1 * 1000 - 90_000, -3);
    expect(e?.earliestAt).toBeLessThan(e?.arrivalAt ?? 0);
  });

  it('expects the likely stop time ahead, half a typical stop below its mean, the late side of the range keeping the mean', () => {
    // Three trips of the lane: detour 1, 20 m/s, 10 % stops, pace 0.054 / 0.06 / 0.066 ms/m (a spread of 10 %).
    const lane: LaneStats = { n: 3, detour: [3, 3], speed: [60, 1200], stopRatio: [0.3, 0.03], pace: [0.18, 0.010872] };
    const at = (track: TrackStats | undefined) => {
      const e = estimateArrival({ destination, origin: start, plannedArrivalAt: null, track, lane });
      if (!e || e.asOf === null) throw new Error('no estimate');
      return e;
    };
    // 20.4 km driven at 20 m/s, with or without a 12 min stop at 10.8 km (a jam), seen from the same place.
    const jam = trackOf([...drive(0, 0, 20, 10), ...Array.from({ length: 12 }, (_, i): [number, number] => [600 + i * 60, 10_800]), ...drive(1320, 12_000, 20, 8)]);
    const free = trackOf(drive(0, 0, 20, 18));
    if (!jam || !free) throw new Error('no track');
    expect([jam.ns, jam.st, jam.md, jam.mv]).toEqual([1, 720_000, free.md, free.mv]);
    const mean = ((100_000 - 500 - 20_400) / 20) * 1.1 * 1000;
    // Half of (12 min + 2 x 3 min) / 3 stops = 180 s below the mean; with no stop seen, half the prior's 3 min.
    const e = at(jam);
    expect(e.arrivalAt - jam.t).toBeCloseTo(mean - 180_000, -3);
    expect(at(free).arrivalAt - free.t).toBeCloseTo(mean - 90_000, -3);
    // The range: 1.5 x the lane's spread of pace either side, and the late side what was taken off too.
    expect(e.arrivalAt - e.earliestAt).toBeCloseTo(0.15 * (mean - 180_000), -3);
    expect(e.latestAt - e.arrivalAt).toBeCloseTo(0.15 * (mean - 180_000) + 180_000, -3);
    // Never more than the stops ahead: 1.1 km out they are 5.5 s, the estimate is the 55 s of driving.
    const near = trackOf(drive(0, 0, 20, 83));
    expect((at(near).arrivalAt - (near?.t ?? 0))).toBeCloseTo(55_000, -3);
  });
});

describe('laneTripOf', () => {
  it('leaves out the stop inside the destination after the arrival, and a track that never moved', () => {
    const track = trackOf([...drive(0, 0, 20, 6), [360, 6000], [420, 6000], [480, 6000]]);
    const trip = laneTripOf(track, start, north(6000), 0, 300_000);
    expect(trip?.detour).toBe(1);
    expect(trip?.speed).toBeCloseTo(20, 3);
    expect(trip?.stopRatio).toBe(0);
    expect(laneTripOf(trackOf([[0, 0], [60, 0]]), start, north(6000), 0, 60_000)).toBeNull();
  });

  it('measures the detour to the edge of the destination circle, where the track ends and remainingMeters is measured', () => {
    // A road with one bend into a 500 m circle 10 km away: the track ends at the circle's edge, 9.5 km north.
    const east = (meters: number) => meters / (M_PER_DEG * Math.cos((start.lat * Math.PI) / 180));
    let track: TrackStats | undefined;
    for (const [seconds, n, e] of [[0, 0, 0], [300, 4750, 1500], [600, 9500, 0]]) track = foldTrack(track, seconds * 1000, north(n).lat, start.lng + east(e), 5);
    const trip = laneTripOf(track, start, { ...north(10_000), radiusMeters: 500 }, 0, 600_000);
    // 2 x 4981 m driven over 9500 m to the edge; over the 10 km between the centres it would be 0.996 (the bend lost).
    expect(trip?.detour).toBeCloseTo((2 * Math.hypot(4750, 1500)) / 9500, 2);
  });
});

describe('etaMovedEnough', () => {
  const estimate = (arrivalAt: number, asOf: number) => ({ arrivalAt, earliestAt: arrivalAt, latestAt: arrivalAt, remainingMeters: 0, basis: 'Position' as const, asOf });
  it('publishes from null, and past max(10 min, 10 % of the remaining time)', () => {
    expect(etaMovedEnough(null, estimate(0, 0))).toBe(true);
    expect(etaMovedEnough(0, estimate(10 * 60_000, 0))).toBe(false);
    expect(etaMovedEnough(0, estimate(10 * 60_000 + 1, 0))).toBe(true);
    // 5 h to go: the threshold is 30 min.
    expect(etaMovedEnough(5 * 3600_000 - 29 * 60_000, estimate(5 * 3600_000, 0))).toBe(false);
    expect(etaMovedEnough(5 * 3600_000 - 31 * 60_000, estimate(5 * 3600_000, 0))).toBe(true);
  });
});
