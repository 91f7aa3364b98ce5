import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalBuckets } from './local-buckets.js';
import type { Policy } from './rate-limit.policies.js';

const policy: Policy = { name: 'application', limit: { quota: 5, windowSeconds: 60, burst: 5 } };

describe('LocalBuckets', () => {
  let now = 1000;
  beforeEach(() => {
    vi.spyOn(performance, 'now').mockImplementation(() => now);
  });
  afterEach(() => vi.restoreAllMocks());

  it('allows the burst, then refuses until one more unit has refilled, with the answer the script gives', () => {
    const buckets = new LocalBuckets();
    const answers = Array.from({ length: 6 }, () => buckets.decide(policy, ['a'], 1, 'charge'));
    expect(answers.map((answer) => answer.allowed)).toEqual([true, true, true, true, true, false]);
    expect(answers[0]).toEqual({ allowed: true, remaining: 4, msUntilNext: 12000 });
    expect(answers[5]).toEqual({ allowed: false, remaining: 0, msUntilNext: 12000 });
    now += 12000;
    expect(buckets.decide(policy, ['a'], 1, 'charge').allowed).toBe(true);
    // Another subject has a bucket of its own.
    expect(buckets.decide(policy, ['b'], 1, 'charge')).toEqual({ allowed: true, remaining: 4, msUntilNext: 12000 });
  });

  it('peeks without charging, forces past the capacity, and counts several subjects together', () => {
    const buckets = new LocalBuckets();
    expect(buckets.decide(policy, ['a', 'b'], 5, 'peek').allowed).toBe(true);
    expect(buckets.decide(policy, ['a', 'b'], 6, 'peek').allowed).toBe(false);
    for (let i = 0; i < 7; i++) expect(buckets.decide(policy, ['a', 'b'], 1, 'force').allowed).toBe(true);
    // Two units over: refused until three have refilled.
    expect(buckets.decide(policy, ['a'], 1, 'peek')).toEqual({ allowed: false, remaining: 0, msUntilNext: 36000 });
    expect(buckets.decide(policy, ['b', 'c'], 1, 'charge').allowed).toBe(false);
    now += 36000;
    expect(buckets.decide(policy, ['b', 'c'], 1, 'charge').allowed).toBe(true);
  });
});
