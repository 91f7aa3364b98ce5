import { describe, expect, it } from 'vitest';
import { ConnectionBudget, LocalRateLimiter } from './local-limits.js';

describe('LocalRateLimiter', () => {
  it('allows the burst at once, then the quota per window, and says how long to wait', () => {
    const limiter = new LocalRateLimiter({ quota: 10, windowSeconds: 1, burst: 3 });
    const t = 1_000_000;
    expect([limiter.take('a', t), limiter.take('a', t), limiter.take('a', t)]).toEqual([0, 0, 0]);
    expect(limiter.take('a', t)).toBe(1);
    expect(limiter.allows('a', t)).toBe(false);
    // One interval (100 ms) later one more fits.
    expect(limiter.take('a', t + 100)).toBe(0);
    expect(limiter.take('a', t + 100)).toBeGreaterThan(0);
    // Keys are independent.
    expect(limiter.take('b', t)).toBe(0);
  });

  it('refills completely after a quiet period', () => {
    const limiter = new LocalRateLimiter({ quota: 1, windowSeconds: 60, burst: 2 });
    expect([limiter.take('x', 0), limiter.take('x', 0), limiter.take('x', 0)]).toEqual([0, 0, 60]);
    expect([limiter.take('x', 120_000), limiter.take('x', 120_000)]).toEqual([0, 0]);
  });
});

describe('ConnectionBudget', () => {
  it('holds at most its maximum and gives places back', () => {
    const budget = new ConnectionBudget(2);
    expect([budget.tryAcquire(), budget.tryAcquire(), budget.tryAcquire()]).toEqual([true, true, false]);
    budget.release();
    expect(budget.tryAcquire()).toBe(true);
    expect(budget.count).toBe(2);
  });
});
