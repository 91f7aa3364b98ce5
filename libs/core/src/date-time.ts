import { ParameterIssue } from '@tracking/contracts';
import { DomainError } from './domain-error.js';

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
 *
 * Read character by character (speed machinery: a batch of readings parses thousands; the simple version
 * is the regular expression
 * `^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$`).
 */
export function parseDateTime(text: string): Date | undefined {
  const length = text.length;
  if (length < 20) return undefined;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return undefined;
  const t = text.charCodeAt(10);
  if (text[4] !== '-' || text[7] !== '-' || (t !== T && t !== LOWER_T) || text[13] !== ':' || text[16] !== ':') return undefined;
  let at = 19;
  let ms = 0;
  if (text[at] === '.') {
    const start = ++at;
    while (at < length && isDigit(text.charCodeAt(at))) {
      if (at - start < 3) ms = ms * 10 + text.charCodeAt(at) - ZERO;
      at++;
    }
    const count = at - start;
    if (count < 1 || count > 9) return undefined;
    for (let place = count; place < 3; place++) ms *= 10;
  }
  let offset = 0;
  const zone = text.charCodeAt(at);
  if (zone === Z || zone === LOWER_Z) {
    if (at + 1 !== length) return undefined;
  } else if (zone === PLUS || zone === MINUS) {
    const offsetHours = digits(text, at + 1, 2);
    const offsetMinutes = digits(text, at + 4, 2);
    if (at + 6 !== length || text[at + 3] !== ':' || offsetHours < 0 || offsetMinutes < 0 || offsetHours > 23 || offsetMinutes > 59) return undefined;
    offset = (zone === MINUS ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  } else {
    return undefined;
  }
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  return new Date(utc(year, month, day, hour, minute, second, ms) - offset);
}

const ZERO = 48;
const T = 84;
const LOWER_T = 116;
const Z = 90;
const LOWER_Z = 122;
const PLUS = 43;
const MINUS = 45;

function isDigit(code: number): boolean {
  return code >= ZERO && code <= ZERO + 9;
}

/** The number the `count` ASCII digits at `start` write, or -1 when any of them is not a digit (or missing). */
function digits(text: string, start: number, count: number): number {
  let value = 0;
  for (let at = start; at < start + count; at++) {
    const code = text.charCodeAt(at);
    if (!isDigit(code)) return -1;
    value = value * 10 + code - ZERO;
  }
  return value;
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
