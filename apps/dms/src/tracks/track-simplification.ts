/* eslint-disable @typescript-eslint/no-non-null-assertion -- loops over parallel arrays indexed within their lengths: `!` states the bound the loop checks, which noUncheckedIndexedAccess cannot see. */
/**
 * Douglas-Peucker for a budget of points rather than a tolerance (docs/tracks.md, "Simplification").
 *
 * Libraries (`simplify-js`, which `@turf/simplify` wraps) take a tolerance and answer one
 * simplification; finding the tolerance that fits `maxPoints` would take a search of a dozen or more full
 * runs over 100000 points. Instead one pass per device ranks every point by the largest tolerance at
 * which Douglas-Peucker still keeps it: a point is kept at tolerance ε exactly when its distance to the
 * segment it splits exceeds ε and so does every split above it, so its rank is the minimum of those
 * distances. Then one tolerance for all devices is the smallest that fits the budget: the points ranked
 * above it are exactly what Douglas-Peucker at that tolerance keeps.
 */

/** Metres per degree of latitude (and of longitude at the equator), spherical Earth. */
const METRES_PER_DEGREE = 111_320;

/** One device's positions, in `recordedAt` order. */
export interface DevicePath {
  lat: ArrayLike<number>;
  lng: ArrayLike<number>;
}

/**
 * For each point of the path, the largest tolerance (in metres, on a local equirectangular projection
 * at the path's mean latitude) at which Douglas-Peucker keeps it; `Infinity` for the first and last.
 */
export function keepRanks(path: DevicePath): Float64Array {
  const n = path.lat.length;
  const ranks = new Float64Array(n);
  if (n === 0) return ranks;
  let latSum = 0;
  for (let i = 0; i < n; i++) latSum += path.lat[i]!;
  const xScale = METRES_PER_DEGREE * Math.cos((latSum / n) * (Math.PI / 180));
  const x = new Float64Array(n);
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = path.lng[i]! * xScale;
    y[i] = path.lat[i]! * METRES_PER_DEGREE;
  }
  ranks[0] = Infinity;
  ranks[n - 1] = Infinity;
  // An explicit stack of [first, last, rank of the split above]: no recursion depth on long tracks.
  const stack: number[] = [0, n - 1, Infinity];
  while (stack.length > 0) {
    const ceiling = stack.pop()!;
    const last = stack.pop()!;
    const first = stack.pop()!;
    if (last - first < 2) continue;
    let farthest = first + 1;
    let farthestSq = -1;
    for (let i = first + 1; i < last; i++) {
      const d = segmentDistanceSq(x[i]!, y[i]!, x[first]!, y[first]!, x[last]!, y[last]!);
      if (d > farthestSq) {
        farthestSq = d;
        farthest = i;
      }
    }
    const rank = Math.min(Math.sqrt(farthestSq), ceiling);
    ranks[farthest] = rank;
    stack.push(first, farthest, rank, farthest, last, rank);
  }
  return ranks;
}

function segmentDistanceSq(px: number, py: number, ax: number, ay: number, bx: number, by: number): number {
  let dx = bx - ax;
  let dy = by - ay;
  let x = ax;
  let y = ay;
  if (dx !== 0 || dy !== 0) {
    const t = ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy);
    if (t > 1) {
      x = bx;
      y = by;
    } else if (t > 0) {
      x += dx * t;
      y += dy * t;
    }
  }
  dx = px - x;
  dy = py - y;
  return dx * dx + dy * dy;
}

/** Which points of each path to keep, and whether any was dropped. */
export interface Simplification {
  keep: Uint8Array[];
  simplified: boolean;
  /** The tolerance applied (metres); 0 when nothing was dropped. */
  tolerance: number;
}

/**
 * Keeps at most `maxPoints` points of all paths together, by one Douglas-Peucker tolerance for every
 * path: the smallest at which the total fits. Each path's first and last point are always kept, so a
 * track of more than `maxPoints / 2` devices returns their endpoints and more than `maxPoints` points.
 */
export function simplifyPaths(paths: DevicePath[], maxPoints: number): Simplification {
  const total = paths.reduce((sum, path) => sum + path.lat.length, 0);
  if (total <= maxPoints) {
    return { keep: paths.map((path) => new Uint8Array(path.lat.length).fill(1)), simplified: false, tolerance: 0 };
  }
  const ranks = paths.map(keepRanks);
  let endpoints = 0;
  for (const rank of ranks) for (let i = 0; i < rank.length; i++) if (rank[i] === Infinity) endpoints++;
  const interior = new Float64Array(total - endpoints);
  let next = 0;
  for (const rank of ranks) for (let i = 0; i < rank.length; i++) if (rank[i] !== Infinity) interior[next++] = rank[i]!;
  const budget = maxPoints - endpoints;
  let tolerance = Infinity;
  if (budget > 0 && interior.length > 0) {
    // Keeping the points ranked above the (budget + 1)-th largest rank keeps at most `budget`: fewer when
    // ranks tie at it (a split capped by the one above shares its rank), as Douglas-Peucker at any one
    // tolerance would.
    tolerance = budget >= interior.length ? -1 : kthSmallest(interior, interior.length - budget - 1);
  }
  const keep = ranks.map((rank) => {
    const kept = new Uint8Array(rank.length);
    for (let i = 0; i < rank.length; i++) kept[i] = rank[i] === Infinity || rank[i]! > tolerance ? 1 : 0;
    return kept;
  });
  return { keep, simplified: true, tolerance: Math.max(0, tolerance) };
}

/**
 * The k-th smallest (from 0) of `values`, which it reorders: Hoare's selection, linear on average. Hand
 * written because it replaces sorting every rank (`Float64Array.prototype.sort`, about 8 ms of the DMS's
 * 60 ms of CPU for a 100000-position track) to find one of them; the simple version is
 * `values.sort()[k]`.
 */
export function kthSmallest(values: Float64Array, k: number): number {
  let left = 0;
  let right = values.length - 1;
  while (left < right) {
    const pivot = values[(left + right) >>> 1]!;
    let i = left;
    let j = right;
    while (i <= j) {
      while (values[i]! < pivot) i++;
      while (values[j]! > pivot) j--;
      if (i <= j) {
        const swap = values[i]!;
        values[i] = values[j]!;
        values[j] = swap;
        i++;
        j--;
      }
    }
    if (k <= j) right = j;
    else if (k >= i) left = i;
    else return values[k]!;
  }
  return values[k]!;
}
