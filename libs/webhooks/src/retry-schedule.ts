import { ConfigError, type Reader } from '@tracking/core';

const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** The delays of API.md, "Events and webhooks": after the 1st failed attempt 5 s, ... after the 7th 10 h; the 8th failure is final. */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h';

/** The longest a `Retry-After` may postpone the next attempt. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * Parses a retry schedule such as `5s,5m,30m,2h,5h,10h,10h` (units ms, s, m, h) into delays in ms.
 * Throws on anything else: an empty list, a unit missing, a negative or fractional number.
 */
export function parseRetrySchedule(text: string): number[] {
  const steps = text.split(',').map((step) => step.trim());
  return steps.map((step) => {
    const match = /^(\d+)(ms|s|m|h)$/.exec(step);
    if (!match) throw new Error(`"${step}" is not a delay such as 500ms, 5s, 5m or 2h`);
    return Number(match[1]) * UNITS_MS[match[2]];
  });
}

/** A config reader for `WEBHOOK_RETRY_SCHEDULE`. */
export function retryScheduleReader(): Reader<number[]> {
  return (name, raw) => {
    try {
      return parseRetrySchedule(raw === undefined || raw === '' ? DEFAULT_RETRY_SCHEDULE : raw);
    } catch (error) {
      throw new ConfigError(name, `must be a comma-separated list of delays: ${(error as Error).message}`);
    }
  };
}

/**
 * `Retry-After` (delay-seconds or an HTTP date) in ms from `now`, capped at one hour; null when absent or
 * unreadable. A date in the past is 0.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  let delay: number;
  if (/^\d+$/.test(text)) delay = Number(text) * 1000;
  else {
    const date = Date.parse(text);
    if (Number.isNaN(date) || !/[a-z]/i.test(text)) return null;
    delay = Math.max(0, date - now);
  }
  return Math.min(delay, MAX_RETRY_AFTER_MS);
}

/**
 * When the next attempt is due after failed attempt number `attempt` (1-based), or null when it was the
 * last (the delivery is Failed). A `Retry-After` the receiver sent replaces the step's delay.
 */
export function nextAttemptDelay(schedule: readonly number[], attempt: number, retryAfterMs: number | null): number | null {
  if (attempt > schedule.length) return null;
  return retryAfterMs ?? schedule[attempt - 1];
}
