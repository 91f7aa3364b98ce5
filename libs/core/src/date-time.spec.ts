import { describe, expect, it } from 'vitest';
import { DATE_TIME_MAX, DATE_TIME_MIN, parseDateTime } from './date-time.js';

describe('parseDateTime', () => {
  it.each([
    ['2026-12-01T08:00:00Z', '2026-12-01T08:00:00.000Z'],
    ['2026-12-01T08:00:00.000Z', '2026-12-01T08:00:00.000Z'],
    ['2026-12-01t08:00:00z', '2026-12-01T08:00:00.000Z'],
    ['2026-12-01T09:30:00+01:30', '2026-12-01T08:00:00.000Z'],
    ['2026-12-01T00:00:00-08:00', '2026-12-01T08:00:00.000Z'],
    ['2026-12-01T08:00:00+00:00', '2026-12-01T08:00:00.000Z'],
    ['2026-12-01T08:00:00-00:00', '2026-12-01T08:00:00.000Z'],
    ['2026-12-01T08:00:00.1Z', '2026-12-01T08:00:00.100Z'],
    ['2026-12-01T08:00:00.12Z', '2026-12-01T08:00:00.120Z'],
    ['2026-12-01T08:00:00.999999999Z', '2026-12-01T08:00:00.999Z'],
    ['2024-02-29T23:59:59Z', '2024-02-29T23:59:59.000Z'],
    ['2000-02-29T00:00:00Z', '2000-02-29T00:00:00.000Z'],
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
    ['0099-06-15T12:00:00Z', '0099-06-15T12:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['2026-12-31T23:30:00-01:00', '2027-01-01T00:30:00.000Z'],
    ['2026-12-01T08:00:00+23:59', '2026-11-30T08:01:00.000Z'],
  ])('reads %s as %s', (text, iso) => {
    expect(parseDateTime(text)?.toISOString()).toBe(iso);
  });

  it.each([
    '',
    '2026-12-01',
    '2026-12-01T08:00:00',
    '2026-12-01T08:00Z',
    '2026-12-01 08:00:00Z',
    '2026-12-01T08:00:00+0100',
    '2026-12-01T08:00:00+01',
    '2026-12-01T08:00:00.Z',
    '2026-12-01T08:00:00.1234567890Z',
    '2026-12-01T08:00:00,5Z',
    '26-12-01T08:00:00Z',
    '+02026-12-01T08:00:00Z',
    '2026-1-01T08:00:00Z',
    '2026-00-01T08:00:00Z',
    '2026-13-01T08:00:00Z',
    '2026-12-00T08:00:00Z',
    '2026-12-32T08:00:00Z',
    '2026-02-29T08:00:00Z',
    '1900-02-29T08:00:00Z',
    '2026-04-31T08:00:00Z',
    '2026-12-01T24:00:00Z',
    '2026-12-01T08:60:00Z',
    '2016-12-31T23:59:60Z',
    '2026-12-01T08:00:00+24:00',
    '2026-12-01T08:00:00+01:60',
    ' 2026-12-01T08:00:00Z',
    '2026-12-01T08:00:00Z ',
    '2026-12-01T08:00:00ZZ',
    'Tue, 01 Dec 2026 08:00:00 GMT',
    '1796112000000',
  ])('refuses %j', (text) => {
    expect(parseDateTime(text)).toBeUndefined();
  });

  it('knows the last day of every month as Date does, leap years included, in years 1 to 9999', () => {
    for (const year of [1, 4, 99, 100, 400, 1600, 1900, 2000, 2023, 2024, 2100, 2400, 9996, 9999]) {
      for (let month = 1; month <= 12; month++) {
        const start = new Date(0);
        start.setUTCFullYear(year, month, 0);
        const last = start.getUTCDate();
        const date = `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}`;
        expect(parseDateTime(`${date}-${last}T23:59:59.999Z`)?.getTime()).toBe(start.getTime() + 86_399_999);
        expect(parseDateTime(`${date}-${last + 1}T00:00:00Z`)).toBeUndefined();
      }
    }
  });

  it('gives what the regular expression it replaced gave, over every one-character change of valid texts', () => {
    const variants = new Set<string>();
    const valid = ['2026-12-01T08:00:00Z', '2024-02-29t23:59:59.123456789+05:30', '0001-01-01T00:00:00.5-00:00', '9999-12-31T23:59:59.99z', '2023-02-28T24:00:00Z'];
    const replacements = ['', '0', '1', '3', '9', '-', ':', '.', 'T', 't', 'Z', 'z', '+', ' ', 'x', '٣', '00'];
    for (const text of valid) {
      for (let at = 0; at <= text.length; at++) {
        for (const replacement of replacements) {
          variants.add(text.slice(0, at) + replacement + text.slice(at + 1));
          variants.add(text.slice(0, at) + replacement + text.slice(at));
        }
      }
    }
    expect(variants.size).toBeGreaterThan(2000);
    for (const variant of variants) expect(parseDateTime(variant)?.getTime(), variant).toBe(byRegularExpression(variant));
  });

  it('bounds the range at years 0001 and 9999 in UTC', () => {
    expect(new Date(DATE_TIME_MIN).toISOString()).toBe('0001-01-01T00:00:00.000Z');
    expect(new Date(DATE_TIME_MAX).toISOString()).toBe('9999-12-31T23:59:59.999Z');
    expect(parseDateTime('0000-12-31T23:59:59.999Z')?.getTime()).toBeLessThan(DATE_TIME_MIN);
    expect(parseDateTime('9999-12-31T23:59:59-01:00')?.getTime()).toBeGreaterThan(DATE_TIME_MAX);
  });
});

/** The former implementation, by regular expression, as the reference of the one that replaced it. */
function byRegularExpression(text: string): number | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/.exec(text);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const [, , , , , , , fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = match;
  const utc = (y: number, mo: number, d: number, h = 0, mi = 0, se = 0, ms = 0) => {
    const date = new Date(0);
    date.setUTCFullYear(y, mo - 1, d);
    date.setUTCHours(h, mi, se, ms);
    return date.getTime();
  };
  const daysInMonth = new Date(utc(year, month + 1, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return undefined;
  if (hour > 23 || minute > 59 || second > 59 || Number(offsetHours) > 23 || Number(offsetMinutes) > 59) return undefined;
  const ms = Number(fraction.padEnd(3, '0').slice(0, 3));
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
  return utc(year, month, day, hour, minute, second, ms) - offset;
}
