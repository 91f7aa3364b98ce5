import { entryBound } from '@tracking/core';
import { LRUCache } from 'lru-cache';
import type { RateDecision } from '@tracking/rate-limit';
import type { Policy } from './rate-limit.policies.js';

/** Buckets kept at once; the least recently used go first (a forgotten bucket is a full one). */
const CAPACITY = 100_000;

/**
 * The GCRA of `libs/rate-limit/src/gcra.script.ts` in this process's memory, for the moments Redis does not answer in time:
 * each replica then limits on its own, so a client spread over n replicas gets at most n times its
 * limit, instead of no limit at all. Same arithmetic and modes (charge, peek, force, refund) as the
 * script, in milliseconds of this process's monotonic clock.
 *
 * Hand-written: the script's few lines of arithmetic over an lru-cache; a library would bring its own
 * algorithm, and a bucket must give the same answers whichever side decides.
 */
export class LocalBuckets {
  /** Theoretical arrival time per bucket, ms of `performance.now()`. */
  private readonly tats = new LRUCache<string, number>(entryBound(CAPACITY));

  decide(policy: Policy, subjects: string[], cost: number, mode: 'charge' | 'peek' | 'force'): RateDecision {
    const { quota, windowSeconds, burst } = policy.limit;
    const now = performance.now();
    const interval = (windowSeconds * 1000) / quota;
    const capacity = interval * burst;
    const step = interval * cost;
    const keys = subjects.map((subject) => `${policy.name}|${subject}`);
    const debts = keys.map((key) => Math.max(this.tats.get(key) ?? now, now) - now);
    let debt = Math.max(0, ...debts);
    let allowed = false;
    if (mode === 'peek') {
      allowed = debt + step <= capacity;
    } else if (step < 0 || mode === 'force' || debt + step <= capacity) {
      allowed = true;
      debt = 0;
      keys.forEach((key, i) => {
        const next = (debts[i] ?? 0) + step;
        if (next <= 0) this.tats.delete(key);
        else this.tats.set(key, now + next);
        debt = Math.max(debt, next);
      });
    }
    const remaining = Math.max(0, Math.floor((capacity - debt) / interval));
    const untilNext = debt - capacity + (remaining + 1) * interval;
    return { allowed, remaining, msUntilNext: Math.max(1, Math.ceil(untilNext)) };
  }
}
