import Flatbush from 'flatbush';
import { capBoxes, distanceMeters } from './geo.js';

/** A point of interest as the evaluation needs it: a circular geofence with its dwell time. */
export interface Place {
  id: string;
  lat: number;
  lng: number;
  radiusMeters: number;
  dwellSeconds: number;
}

/** A place a position may be inside of, or in the band around, with its exact great-circle distance. */
export interface Candidate {
  place: Place;
  distanceMeters: number;
}

/** The hysteresis band: a position is outside only beyond the radius plus this share of it. */
export const OUTSIDE_FACTOR = 1.1;

/**
 * The points of interest of one account in a static R-tree (flatbush): each place is indexed by the
 * rectangles covering its outer circle (radius x 1.1), so a lookup visits only the places whose band a
 * position can reach, then checks each with the exact great-circle distance. Build one per account and
 * rebuild it when the account's places change; it is immutable and cheap to share.
 */
export class PlaceIndex {
  private readonly places: Place[];
  private readonly byId = new Map<string, Place>();
  private readonly boxOwner: Int32Array;
  private readonly tree: Flatbush | null;

  constructor(places: readonly Place[]) {
    this.places = places.map((p) => ({ ...p }));
    const boxes: Array<[number, number[]]> = [];
    this.places.forEach((place, i) => {
      this.byId.set(place.id, place);
      for (const box of capBoxes(place.lat, place.lng, place.radiusMeters * OUTSIDE_FACTOR)) boxes.push([i, box]);
    });
    this.boxOwner = new Int32Array(boxes.length);
    if (boxes.length === 0) {
      this.tree = null;
      return;
    }
    const tree = new Flatbush(boxes.length);
    boxes.forEach(([owner, [minX, minY, maxX, maxY]], i) => {
      this.boxOwner[i] = owner;
      tree.add(minX, minY, maxX, maxY);
    });
    tree.finish();
    this.tree = tree;
  }

  get size(): number {
    return this.places.length;
  }

  get(id: string): Place | undefined {
    return this.byId.get(id);
  }

  /**
   * Every place that a position with this accuracy is not definitively outside of (distance minus
   * accuracy at most radius x 1.1). A place missing from the answer is one the position is outside of.
   */
  candidates(lat: number, lng: number, accuracyMeters = 0): Candidate[] {
    if (!this.tree) return [];
    const found: Candidate[] = [];
    const boxes = capBoxes(lat, lng, accuracyMeters);
    // A place crossing the antimeridian has two boxes, which a query box spanning every longitude (near a
    // pole) or a split query can both hit: the owner is checked once.
    const seen = new Set<number>();
    for (const [minX, minY, maxX, maxY] of boxes) {
      for (const hit of this.tree.search(minX, minY, maxX, maxY)) {
        const owner = this.boxOwner[hit];
        if (seen.has(owner)) continue;
        seen.add(owner);
        const place = this.places[owner];
        const distance = distanceMeters(lat, lng, place.lat, place.lng);
        if (distance - accuracyMeters <= place.radiusMeters * OUTSIDE_FACTOR) found.push({ place, distanceMeters: distance });
      }
    }
    return found;
  }
}
