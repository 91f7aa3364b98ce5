import { describe, expect, it } from 'vitest';
import { distanceMeters, MAX_TEMPERATURE_C, PHASES, TRIP_SECONDS, TRIPS, tripStateAt } from './trips.js';

const everySecond = Array.from({ length: TRIP_SECONDS + 1 }, (_, t) => t);

describe.each(TRIPS.map((trip) => [trip.name, trip] as const))('the demo trip %s', (_name, trip) => {
  const at = (t: number) => tripStateAt(trip, t);
  const from = (place: typeof trip.origin, t: number) => distanceMeters([place.lat, place.lng], [at(t).lat, at(t).lng]);

  it('starts at the origin and ends at the destination, well inside each while parked', () => {
    for (let t = 0; t < PHASES.atOrigin; t++) expect(from(trip.origin, t)).toBeLessThan(trip.origin.radiusMeters / 2);
    for (let t = PHASES.atOrigin + PHASES.driving; t <= TRIP_SECONDS; t++) expect(from(trip.destination, t)).toBeLessThan(trip.destination.radiusMeters / 2);
  });

  it('leaves the origin for good early in the drive, at speeds a truck drives in town', () => {
    const outside = everySecond.findIndex((t) => from(trip.origin, t) > trip.origin.radiusMeters);
    expect(outside).toBeGreaterThan(PHASES.atOrigin);
    expect(outside).toBeLessThan(PHASES.atOrigin + PHASES.driving / 2);
    for (let t = outside; t <= TRIP_SECONDS; t++) expect(from(trip.origin, t)).toBeGreaterThan(trip.origin.radiusMeters);
    const averageKmh = (at(0).routeMeters / PHASES.driving) * 3.6;
    expect(averageKmh).toBeGreaterThan(30);
    expect(averageKmh).toBeLessThan(80);
  });

  it('moves at the speed its positions say, along the road, and stands still while parked', () => {
    for (let t = PHASES.atOrigin + 1; t < PHASES.atOrigin + PHASES.driving - 1; t++) {
      const travelled = distanceMeters([at(t).lat, at(t).lng], [at(t + 1).lat, at(t + 1).lng]);
      // Speed sampled at t against the distance covered over the next second (positions are along straight legs).
      expect(Math.abs(at(t).speedMps - travelled)).toBeLessThan(1);
      expect(at(t).headingDegrees).toBeGreaterThanOrEqual(0);
      expect(at(t).headingDegrees).toBeLessThan(360);
    }
    expect(at(0).speedMps).toBe(0);
    expect(at(TRIP_SECONDS).speedMps).toBe(0);
  });

  it(trip.excursion ? 'goes above the cold-chain limit once, on the road, and comes back' : 'stays within the cold-chain limit', () => {
    const above = everySecond.filter((t) => at(t).temperatureC > MAX_TEMPERATURE_C);
    if (!trip.excursion) {
      expect(above).toEqual([]);
      return;
    }
    expect(above.length).toBeGreaterThan(5);
    // One stretch, while driving.
    expect(above.at(-1)! - above[0]! + 1).toBe(above.length);
    expect(above[0]).toBeGreaterThan(PHASES.atOrigin);
    expect(above.at(-1)).toBeLessThan(PHASES.atOrigin + PHASES.driving);
  });
});
