import { describe, expect, it } from 'vitest';
import { capBoxes, distanceMeters, EARTH_RADIUS_METERS } from './geo.js';
import { PlaceIndex, type Place } from './place-index.js';

/** The position `meters` from (lat, lng) along the bearing (degrees), on the same sphere. */
function offset(lat: number, lng: number, meters: number, bearing: number): { lat: number; lng: number } {
  const r = Math.PI / 180;
  const d = meters / EARTH_RADIUS_METERS;
  const b = bearing * r;
  const lat1 = lat * r;
  const lat2 = Math.asin(Math.sin(lat1) * Math.cos(d) + Math.cos(lat1) * Math.sin(d) * Math.cos(b));
  const lng2 = lng * r + Math.atan2(Math.sin(b) * Math.sin(d) * Math.cos(lat1), Math.cos(d) - Math.sin(lat1) * Math.sin(lat2));
  let lngDeg = lng2 / r;
  lngDeg = ((((lngDeg + 180) % 360) + 360) % 360) - 180;
  return { lat: lat2 / r, lng: lngDeg };
}

const place = (id: string, lat: number, lng: number, radiusMeters = 200): Place => ({ id, lat, lng, radiusMeters, dwellSeconds: 0 });

describe('distanceMeters', () => {
  it('measures a degree of latitude and the antimeridian the short way', () => {
    expect(distanceMeters(0, 0, 1, 0)).toBeCloseTo(111195, -1);
    expect(distanceMeters(0, 179.999, 0, -179.999)).toBeCloseTo(222.4, 0);
  });
});

describe('capBoxes', () => {
  it('splits a cap on the antimeridian and spans every longitude around a pole', () => {
    expect(capBoxes(10, 179.9999, 1000)).toHaveLength(2);
    const polar = capBoxes(89.999, 0, 1000);
    expect(polar).toHaveLength(1);
    expect(polar[0][0]).toBe(-180);
    expect(polar[0][2]).toBe(180);
  });
});

describe('PlaceIndex.candidates', () => {
  it('finds the places whose band a position reaches, with the exact distance, and no others', () => {
    const index = new PlaceIndex([place('a', 52.52, 13.405), place('b', 52.53, 13.405), place('c', 48.85, 2.35)]);
    const near = offset(52.52, 13.405, 215, 90); // inside a's band (200..220 m)
    const found = index.candidates(near.lat, near.lng);
    expect(found.map((c) => c.place.id)).toEqual(['a']);
    expect(found[0].distanceMeters).toBeCloseTo(215, 3);
    const beyond = offset(52.52, 13.405, 225, 90);
    expect(index.candidates(beyond.lat, beyond.lng)).toEqual([]);
    // Accuracy widens the search: 225 m away with 10 m accuracy is not definitively outside.
    expect(index.candidates(beyond.lat, beyond.lng, 10).map((c) => c.place.id)).toEqual(['a']);
  });

  it('finds a place across the antimeridian once, from either side', () => {
    const index = new PlaceIndex([place('dateline', -16.5, 179.9995, 500)]);
    for (const lng of [179.999, 180, -180, -179.999]) {
      expect(index.candidates(-16.5, lng).map((c) => c.place.id)).toEqual(['dateline']);
    }
    expect(index.candidates(-16.5, -179.99)).toEqual([]);
  });

  it('finds a place holding a pole from any longitude, once', () => {
    const index = new PlaceIndex([place('pole', 90, 0, 1000)]);
    for (const lng of [-180, -90, 0, 45, 179.9]) {
      expect(index.candidates(89.995, lng).map((c) => c.place.id)).toEqual(['pole']);
    }
    expect(index.candidates(89.95, 0)).toEqual([]);
    // A query box spanning every longitude near the pole hits both boxes of a split place once.
    const split = new PlaceIndex([place('edge', 89.99, 179.99, 50)]);
    expect(split.candidates(89.99, 179.99, 5000).map((c) => c.place.id)).toEqual(['edge']);
  });

  it('agrees with a full scan on random places and positions', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const places = Array.from({ length: 2000 }, (_, i) => place(`p${i}`, random() * 180 - 90, random() * 360 - 180, 10 + random() * 100000));
    const index = new PlaceIndex(places);
    for (let i = 0; i < 500; i++) {
      const lat = random() * 180 - 90;
      const lng = random() * 360 - 180;
      const accuracy = random() < 0.5 ? 0 : random() * 5000;
      const scan = places.filter((p) => distanceMeters(lat, lng, p.lat, p.lng) - accuracy <= p.radiusMeters * 1.1).map((p) => p.id);
      expect(index.candidates(lat, lng, accuracy).map((c) => c.place.id).sort()).toEqual(scan.sort());
    }
  });

  it('answers nothing without places', () => {
    expect(new PlaceIndex([]).candidates(0, 0)).toEqual([]);
  });
});
