import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { describe, expect, it } from 'vitest';
import { KNOT_MPS, OSMAND_FIELDS, osmandReport, timestampOf, TRACCAR_FIELDS, trackerField, traccarReport } from './osmand.js';

const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error instanceof DomainError ? { code: error.code, details: error.details } : error;
  }
  return undefined;
};

describe('timestampOf', () => {
  const instant = '2026-11-24T08:30:00.250Z';
  const ms = Date.parse(instant);
  it('reads Unix seconds below 2^31, Unix milliseconds above, and RFC 3339', () => {
    expect(timestampOf(String(ms / 1000), 't')).toBe(instant);
    expect(timestampOf(String(ms), 't')).toBe(instant);
    expect(timestampOf('2026-11-24T09:30:00.25+01:00', 't')).toBe(instant);
    expect(timestampOf(' 1764000000 ', 't')).toBe(new Date(1_764_000_000_000).toISOString());
  });

  it('refuses what is none of them, naming the parameter', () => {
    expect(refusal(() => timestampOf('yesterday', 'timestamp'))).toEqual({ code: ErrorCode.InvalidParameter, details: { field: 'timestamp', issue: ParameterIssue.InvalidFormat } });
    expect(refusal(() => timestampOf('-5', 'timestamp'))).toMatchObject({ details: { issue: ParameterIssue.InvalidFormat } });
    expect(refusal(() => timestampOf('99999999999999999', 'timestamp'))).toMatchObject({ details: { issue: ParameterIssue.OutOfRange } });
  });
});

describe('osmandReport', () => {
  it('maps knots to m/s and negatives to unknown, and ignores unknown parameters', () => {
    const report = osmandReport(new URLSearchParams('id=t1&lat=1.5&lon=2.5&timestamp=1764000000&speed=10&bearing=-1&accuracy=-1&altitude=-3&batt=50&hdop=2'));
    expect(report).toEqual({
      id: 't1',
      reading: {
        recordedAt: new Date(1_764_000_000_000).toISOString(),
        location: { lat: 1.5, lng: 2.5, accuracyMeters: null, altitudeMeters: -3, speedMps: 10 * KNOT_MPS, headingDegrees: null },
        batteryPercent: 50,
      },
    });
  });

  it('takes a report without a position (a battery level alone), and wants lat and lon together', () => {
    expect(osmandReport(new URLSearchParams('id=t1&timestamp=1764000000&batt=5')).reading).toEqual({ recordedAt: expect.any(String), batteryPercent: 5 });
    expect(refusal(() => osmandReport(new URLSearchParams('id=t1&timestamp=1764000000&lat=1')))).toMatchObject({ details: { field: 'lon', issue: ParameterIssue.Required } });
  });
});

describe('traccarReport', () => {
  it('maps the battery fraction to percent and -1 to unknown', () => {
    const report = traccarReport({
      device_id: 'p1',
      location: { timestamp: '2026-11-24T08:30:00Z', coords: { latitude: 1, longitude: 2, speed: -1, heading: 180, accuracy: 3 }, battery: { level: -1 } },
    });
    expect(report.reading).toEqual({
      recordedAt: '2026-11-24T08:30:00.000Z',
      location: { lat: 1, lng: 2, accuracyMeters: 3, altitudeMeters: null, speedMps: null, headingDegrees: 180 },
    });
  });

  it('refuses a body that is not an object, and names a missing or wrong field', () => {
    expect(refusal(() => traccarReport([]))).toMatchObject({ code: ErrorCode.MalformedRequest });
    expect(refusal(() => traccarReport({ device_id: 'p', location: { timestamp: 't', coords: {} } }))).toMatchObject({ details: { field: 'location.timestamp' } });
    expect(refusal(() => traccarReport({ device_id: 'p', location: { timestamp: '2026-11-24T08:30:00Z', coords: { latitude: '1', longitude: 2 } } }))).toMatchObject({
      details: { field: 'location.coords.latitude', issue: ParameterIssue.InvalidFormat },
    });
  });
});

describe('trackerField', () => {
  it("names the tracker's own parameter for a field of the single reading", () => {
    expect(trackerField('readings.0.location.lng', OSMAND_FIELDS)).toBe('lon');
    expect(trackerField('readings.0.batteryPercent', TRACCAR_FIELDS)).toBe('location.battery.level');
    expect(trackerField('readings.0', OSMAND_FIELDS)).toBe('lat');
  });
});
