import { describe, expect, it } from 'vitest';
import { type DevicePath, keepRanks, kthSmallest, simplifyPaths } from './track-simplification.js';

/** A seeded random walk, so a failure reproduces. */
function walk(n: number, seed: number, lat0 = 48, lng0 = 11): DevicePath {
  let state = seed;
  const random = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
  const lat: number[] = [];
  const lng: number[] = [];
  let la = lat0;
  let ln = lng0;
  for (let i = 0; i < n; i++) {
    la += (random() - 0.5) * 0.001;
    ln += (random() - 0.3) * 0.001;
    lat.push(la);
    lng.push(ln);
  }
  return { lat, lng };
}

/** Textbook recursive Douglas-Peucker at a tolerance in metres, on the same local projection. */
function referenceDouglasPeucker(path: DevicePath, tolerance: number): boolean[] {
  const n = path.lat.length;
  const mean = Array.from(path.lat).reduce((a, b) => a + b, 0) / n;
  const k = 111_320;
  const pts = Array.from({ length: n }, (_, i) => [path.lng[i]! * k * Math.cos((mean * Math.PI) / 180), path.lat[i]! * k] as const);
  const keep = new Array<boolean>(n).fill(false);
  keep[0] = true;
  keep[n - 1] = true;
  const distance = (p: readonly [number, number], a: readonly [number, number], b: readonly [number, number]) => {
    const [dx, dy] = [b[0] - a[0], b[1] - a[1]];
    const len = dx * dx + dy * dy;
    const t = len === 0 ? 0 : Math.max(0, Math.min(1, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len));
    return Math.hypot(p[0] - (a[0] + t * dx), p[1] - (a[1] + t * dy));
  };
  const split = (first: number, last: number): void => {
    let best = -1;
    let index = -1;
    for (let i = first + 1; i < last; i++) {
      const d = distance(pts[i]!, pts[first]!, pts[last]!);
      if (d > best) [best, index] = [d, i];
    }
    if (index > 0 && best > tolerance) {
      keep[index] = true;
      split(first, index);
      split(index, last);
    }
  };
  split(0, n - 1);
  return keep;
}

describe('simplifyPaths', () => {
  it('keeps every point, unsimplified, when the total fits', () => {
    const paths = [walk(10, 1), walk(5, 2)];
    const result = simplifyPaths(paths, 15);
    expect(result.simplified).toBe(false);
    expect(result.keep.map((k) => Array.from(k))).toEqual([new Array(10).fill(1), new Array(5).fill(1)]);
  });

  it('fits the budget over all devices, keeps each first and last point, and keeps what Douglas-Peucker keeps at its tolerance', () => {
    const paths = [walk(3000, 7), walk(1500, 8, -33, 151), walk(1, 9), walk(2, 10)];
    for (const maxPoints of [2, 7, 8, 50, 1000, 4502]) {
      const result = simplifyPaths(paths, maxPoints);
      const kept = result.keep.reduce((sum, k) => sum + k.reduce((a, b) => a + b, 0), 0);
      expect(result.simplified).toBe(true);
      // Endpoints: 2 + 2 + 1 + 2 = 7, always kept even when the budget is smaller; ties in rank keep a
      // few fewer than the budget (one tolerance keeps all of a tie or none).
      if (maxPoints <= 7) expect(kept).toBe(7);
      else {
        expect(kept).toBeLessThanOrEqual(maxPoints);
        expect(kept).toBeGreaterThanOrEqual(Math.floor(maxPoints * 0.95));
      }
      result.keep.forEach((k, i) => {
        expect(k[0]).toBe(1);
        expect(k[k.length - 1]).toBe(1);
        // The tolerance is the rank of a dropped point: nudged past float rounding in the reference's own arithmetic.
        if (maxPoints > 7) expect(Array.from(k, Boolean)).toEqual(referenceDouglasPeucker(paths[i]!, result.tolerance * (1 + 1e-9)));
      });
    }
  });

  it('ranks a point by the smallest split above it, so a far point under a near split is not kept alone', () => {
    // 0 -> 1 is a small bump, 2 a far spike: at any tolerance the spike comes first.
    const ranks = keepRanks({ lat: [0, 0.00001, 0, 0.01, 0], lng: [0, 0.001, 0.002, 0.003, 0.004] });
    expect(ranks[0]).toBe(Infinity);
    expect(ranks[4]).toBe(Infinity);
    expect(ranks[3]).toBeGreaterThan(1000);
    expect(ranks[1]).toBeLessThan(ranks[3]!);
    expect(ranks[1]).toBeLessThanOrEqual(ranks[3]!);
  });

  it('drops collinear points first and gives duplicate positions rank 0', () => {
    const path = { lat: [0, 0, 0, 0, 0.01, 0.01], lng: [0, 0.001, 0.002, 0.002, 0.003, 0.004] };
    const ranks = keepRanks(path);
    expect(ranks[1]).toBe(0);
    expect(ranks[2]).toBeGreaterThan(0);
    const result = simplifyPaths([path], 4);
    expect(Array.from(result.keep[0]!)).toEqual([1, 0, 1, 0, 1, 1].map((v) => v));
  });

  it('fits 100000 points of two devices into 1000 (speed: bench/tracks.mjs)', () => {
    const paths = [walk(60000, 3), walk(40000, 4)];
    const result = simplifyPaths(paths, 1000);
    const kept = result.keep.reduce((sum, k) => sum + k.reduce((a, b) => a + b, 0), 0);
    expect(kept).toBeLessThanOrEqual(1000);
    expect(kept).toBeGreaterThan(950);
  });
});

describe('kthSmallest', () => {
  it('finds the value sorting would put at k, for every k, with ties and in any order', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    for (const length of [1, 2, 3, 10, 101, 1000]) {
      const source = Float64Array.from({ length }, () => Math.floor(random() * length * 0.5));
      const sorted = Float64Array.from(source).sort();
      for (let k = 0; k < length; k++) expect(kthSmallest(Float64Array.from(source), k)).toBe(sorted[k]);
    }
  });
});
