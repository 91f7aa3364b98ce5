import { describe, expect, it } from 'vitest';
import { PendingAttempts } from './pending-attempts.js';

describe('PendingAttempts', () => {
  it('counts attempts per bucket, the most of any bucket named', () => {
    const pending = new PendingAttempts();
    pending.add(['a', 'b']);
    pending.add(['a', 'c']);
    expect(pending.count(['a', 'x'])).toBe(2);
    expect(pending.count(['b', 'c'])).toBe(1);
    pending.remove(['a', 'b']);
    pending.remove(['a', 'c']);
    expect(pending.count(['a', 'b', 'c'])).toBe(0);
  });

  it('wakes the waiters when an attempt settles, not when a check withdraws quietly', async () => {
    const pending = new PendingAttempts();
    pending.add(['a']);
    pending.add(['a']);
    let woken = false;
    const waiting = pending.settled(60_000).then(() => {
      woken = true;
    });
    pending.remove(['a'], false);
    await Promise.resolve();
    expect(woken).toBe(false);
    pending.remove(['a']);
    await waiting;
    expect(woken).toBe(true);
  });

  it('gives up waiting after the timeout', async () => {
    const started = Date.now();
    await new PendingAttempts().settled(20);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
  });
});
