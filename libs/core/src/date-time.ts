import { ParameterIssue } from '@tracking/contracts';
import { DomainError } from './domain-error.js';

/** RFC 3339 `date-time` (section 5.6): a full date, a time and a time zone; `T` and `Z` in either case. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/** The first and last instants a date-time may name: years 0001 to 9999 in UTC, as PostgreSQL and JSON agree on them. */
export const DATE_TIME_MIN = utc(1, 1, 1, 0, 0, 0, 0);
export const DATE_TIME_MAX = utc(9999, 12, 31, 23, 59, 59, 999);

/** `Date.UTC` without its quirk of reading years 0 to 99 as 1900 to 1999. */
function utc(year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number): number {
  if (year >= 100) return Date.UTC(year, month - 1, day, hour, minute, second, ms);
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime();
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Days of a month of the proleptic Gregorian calendar, as `Date` counts them. */
function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
}

/**
 * The instant an RFC 3339 date-time with a time zone names (`2026-12-01T08:00:00Z`,
 * `2026-12-01T09:00:00.5+01:00`), or undefined when the text is not one or names no real date or
 * time (`2026-02-30`, `24:00`, a leap second). Digits below the millisecond are dropped, as a
 * `Date` holds milliseconds. The caller checks the range (`DATE_TIME_MIN`..`DATE_TIME_MAX`).
 */
export function parseDateTime(text: string): Date | undefined {
  const match = DATE_TIME.exec(text);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const [, , , , , , , fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = match;
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59 || Number(offsetHours) > 23 || Number(offsetMinutes) > 59) return undefined;
  const ms = Number(fraction.padEnd(3, '0').slice(0, 3));
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
  return new Date(utc(year, month, day, hour, minute, second, ms) - offset);
}

/**
 * A nullable date-time field of a request as a `Date` (null and absent alike give null); a value that
 * is not an RFC 3339 date-time is 400 `InvalidFormat` on `field`. The gateway has validated it already;
 * this keeps services honest about what they store.
 */
export function parseDateTimeField(field: string, value: string | null | undefined): Date | null {
  if (value === undefined || value === null) return null;
  const parsed = parseDateTime(value);
  if (!parsed) throw DomainError.invalidParameter(field, ParameterIssue.InvalidFormat, `${field} must be an RFC 3339 date-time with a time zone.`);
  return parsed;
}

/** A stored instant as the API writes it: RFC 3339 in UTC with milliseconds, or null. */
export function toDateTime(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}
