import pLimit from 'p-limit';
import { describe, expect, it } from 'vitest';

/*
 * What WebhookSender relies on in p-limit: an attempt's end wakes the sender from the promise the limiters
 * returned, and the claim it makes reads their counts for the free slots. Were the counts still to hold
 * the attempt then, the claim would see its webhook full and the wake-up would be lost.
 */
describe('the limiters of the webhook sender (p-limit)', () => {
  it('count an attempt in as soon as it is handed to them, and out before the promise they returned settles', async () => {
    const perWebhook = pLimit(2);
    const overall = pLimit(10);
    let finish!: () => void;
    const attempt = perWebhook(() => overall(() => new Promise<void>((resolve) => (finish = resolve))));
    expect(perWebhook.activeCount + perWebhook.pendingCount).toBe(1);
    await new Promise((resolve) => setImmediate(resolve));
    finish();
    await attempt;
    expect([perWebhook.activeCount, perWebhook.pendingCount, overall.activeCount, overall.pendingCount]).toEqual([0, 0, 0, 0]);
  });

  it('hold a third attempt of a webhook until one of its two ends', async () => {
    const perWebhook = pLimit(2);
    const started: number[] = [];
    const ends: (() => void)[] = [];
    const attempts = [1, 2, 3].map((n) => perWebhook(() => new Promise<void>((resolve) => (started.push(n), ends.push(resolve)))));
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([1, 2]);
    ends[0]!();
    await attempts[0];
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([1, 2, 3]);
    ends[1]!();
    ends[2]!();
    await Promise.all(attempts);
  });
});
