import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_SCHEDULE, nextAttemptDelay, parseRetryAfter, parseRetrySchedule, retryScheduleReader } from './retry-schedule.js';

describe('the retry schedule', () => {
  it('is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h by default', () => {
    expect(parseRetrySchedule(DEFAULT_RETRY_SCHEDULE)).toEqual([5000, 300000, 1800000, 7200000, 18000000, 36000000, 36000000]);
    expect(retryScheduleReader()('WEBHOOK_RETRY_SCHEDULE', undefined)).toEqual(parseRetrySchedule(DEFAULT_RETRY_SCHEDULE));
  });

  it('reads ms, s, m and h and refuses anything else, naming the variable', () => {
    expect(parseRetrySchedule('200ms, 1s,2m,1h')).toEqual([200, 1000, 120000, 3600000]);
    for (const bad of ['', '5', '5d', '-5s', '1.5s', '5s,,5s', 's']) {
      expect(() => retryScheduleReader()('WEBHOOK_RETRY_SCHEDULE', bad || ' ')).toThrow(/WEBHOOK_RETRY_SCHEDULE/);
    }
  });

  it('gives the step after each failed attempt and null after the last', () => {
    const schedule = [10, 20, 30];
    expect([1, 2, 3, 4].map((attempt) => nextAttemptDelay(schedule, attempt, null))).toEqual([10, 20, 30, null]);
    expect(nextAttemptDelay(schedule, 2, 5000)).toBe(5000);
    expect(nextAttemptDelay(schedule, 4, 5000)).toBeNull();
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  it('reads seconds and HTTP dates, capped at one hour', () => {
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('86400', now)).toBe(3600000);
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:30 GMT', now)).toBe(30000);
    expect(parseRetryAfter('Mon, 31 Dec 2029 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('Wed, 02 Jan 2030 00:00:00 GMT', now)).toBe(3600000);
  });

  it('ignores what it cannot read', () => {
    for (const bad of [undefined, '', 'soon', '-5', '1.5', '2030-01-01']) expect(parseRetryAfter(bad, now)).toBeNull();
  });
});
