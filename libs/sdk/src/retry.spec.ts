import { describe, expect, it } from 'vitest';
import { backoffDelay, DEFAULT_RETRY_POLICY, parseRetryAfter, retryAfterDelay, sleep } from './retry.js';

describe('backoffDelay', () => {
  it('is full jitter: anywhere from 0 up to the doubling cap, never above maxDelayMs', () => {
    const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1000 };
    expect([0, 1, 2, 3, 4, 10].map((retry) => backoffDelay(policy, retry, () => 0.999999))).toEqual([99, 199, 399, 799, 999, 999]);
    expect(backoffDelay(policy, 3, () => 0)).toBe(0);
    expect(backoffDelay(policy, 2, () => 0.5)).toBe(200);
  });
});

describe('retryAfterDelay', () => {
  it('is Retry-After plus full jitter over one more Retry-After, at least baseDelayMs and at most maxDelayMs of it', () => {
    const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 5000 };
    expect(retryAfterDelay(policy, 1000, () => 0)).toBe(1000);
    expect(retryAfterDelay(policy, 1000, () => 0.5)).toBe(1500);
    expect(retryAfterDelay(policy, 1000, () => 0.999999)).toBe(1999);
    expect(retryAfterDelay(policy, 0, () => 0.999999)).toBe(99);
    expect(retryAfterDelay(policy, 30000, () => 0.999999)).toBe(34999);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP-dates, and nothing else', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('1', now)).toBe(1000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
    expect([null, '', '-1', '1.5', 'soon'].map((value) => parseRetryAfter(value, now))).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });
});

describe('sleep', () => {
  it('rejects with the reason as soon as the signal aborts, and at once when it already has', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const waiting = sleep(60000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(sleep(10, AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
    await expect(sleep(1)).resolves.toBeUndefined();
  });
});
