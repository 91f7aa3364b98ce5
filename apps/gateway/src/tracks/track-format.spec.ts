import { describe, expect, it } from 'vitest';
import { prefersGeoJson, trackFeatures, trackOf } from './track-format.js';

const reply = {
  deviceIds: ['a', 'b'],
  device: [0, 1, 0],
  t: [Date.UTC(2026, 10, 1), Date.UTC(2026, 10, 1, 0, 0, 1), Date.UTC(2026, 10, 1, 0, 0, 2)],
  lat: [1, 2, 3],
  lng: [10, 20, 30],
  accuracyMeters: [5, null, 7],
  totalPoints: 9,
  simplified: true,
};

describe('prefersGeoJson', () => {
  it.each([
    [undefined, false],
    ['application/json', false],
    ['*/*', false],
    ['text/html', false],
    ['application/geo+json', true],
    ['Application/GEO+JSON', true],
    ['application/json, application/geo+json', true],
    ['application/geo+json;q=0.5, application/json', false],
    ['application/json;q=0.4, application/geo+json;q=0.9', true],
    ['application/geo+json;q=0', false],
    ['application/geo+json;q=abc', false],
  ])('%s -> %s', (accept, geo) => expect(prefersGeoJson(accept)).toBe(geo));
});

describe('track formats', () => {
  it('writes the JSON answer from the columns, echoing the window', () => {
    expect(trackOf('s', { from: Date.UTC(2026, 9, 1) }, reply)).toEqual({
      shipmentId: 's',
      points: [
        { recordedAt: '2026-11-01T00:00:00.000Z', lat: 1, lng: 10, accuracyMeters: 5, deviceId: 'a' },
        { recordedAt: '2026-11-01T00:00:01.000Z', lat: 2, lng: 20, accuracyMeters: null, deviceId: 'b' },
        { recordedAt: '2026-11-01T00:00:02.000Z', lat: 3, lng: 30, accuracyMeters: 7, deviceId: 'a' },
      ],
      metadata: { from: '2026-10-01T00:00:00.000Z', to: null, count: 3, totalPoints: 9, simplified: true },
    });
  });

  it('writes one LineString per device in [lng, lat], and a Point for a device with one position', () => {
    expect(trackFeatures(reply)).toEqual({
      type: 'FeatureCollection',
      features: [
        {
          type: 'Feature',
          geometry: { type: 'LineString', coordinates: [[10, 1], [30, 3]] },
          properties: { deviceId: 'a', recordedAt: ['2026-11-01T00:00:00.000Z', '2026-11-01T00:00:02.000Z'], accuracyMeters: [5, 7] },
        },
        {
          type: 'Feature',
          geometry: { type: 'Point', coordinates: [20, 2] },
          properties: { deviceId: 'b', recordedAt: ['2026-11-01T00:00:01.000Z'], accuracyMeters: [null] },
        },
      ],
    });
  });
});
