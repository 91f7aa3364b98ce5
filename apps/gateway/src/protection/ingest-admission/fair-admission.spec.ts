import { describe, expect, it } from 'vitest';
import { AdmissionRefused, FairAdmission } from './fair-admission.js';

/** A task that runs until `finish` is called; `started` tells whether it was admitted. */
function gate(): { task: () => Promise<string>; finish: () => void; started: () => boolean } {
  let finish: (() => void) | undefined;
  let started = false;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    task: async () => {
      started = true;
      await done;
      return 'done';
    },
    finish: () => finish?.(),
    started: () => started,
  };
}

/** Lets settled promises run their callbacks. */
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('FairAdmission', () => {
  it("bounds one key's running cost below the capacity, so another key is admitted at once", async () => {
    const admission = new FairAdmission({ capacity: 3000, perKey: 2000, queuePerKey: 10, maxWaitMs: 60_000 });
    const flood = Array.from({ length: 5 }, gate);
    const floodRuns = flood.map((g) => admission.run('B', 1000, g.task));
    await tick();
    expect(flood.map((g) => g.started())).toEqual([true, true, false, false, false]);
    // Small batches of another key fit next to the flood, several at once.
    const others = Array.from({ length: 3 }, gate);
    const otherRuns = others.map((g) => admission.run('A', 100, g.task));
    await tick();
    expect(others.map((g) => g.started())).toEqual([true, true, true]);
    expect(admission.load).toEqual({ running: 2300, waiting: 3 });
    for (const g of others) g.finish();
    await expect(Promise.all(otherRuns)).resolves.toEqual(['done', 'done', 'done']);
    for (const g of flood) g.finish();
    await expect(Promise.all(floodRuns)).resolves.toEqual(['done', 'done', 'done', 'done', 'done']);
    expect(admission.load).toEqual({ running: 0, waiting: 0 });
  });

  it('gives freed capacity to the key running the least, not to the oldest waiter of a flooding key', async () => {
    const admission = new FairAdmission({ capacity: 2, perKey: 2, queuePerKey: 10, maxWaitMs: 60_000 });
    const b = Array.from({ length: 4 }, gate);
    const bRuns = b.map((g) => admission.run('B', 1, g.task));
    await tick();
    const a = gate();
    const aRun = admission.run('A', 1, a.task);
    await tick();
    expect(a.started()).toBe(false);
    b[0]?.finish();
    await tick();
    // B's third batch waited longer, but A runs nothing.
    expect(a.started()).toBe(true);
    expect(b[2]?.started()).toBe(false);
    a.finish();
    await aRun;
    await tick();
    expect(b[2]?.started()).toBe(true);
    for (const g of b) g.finish();
    await Promise.all(bRuns);
  });

  it('keeps freed capacity for a waiting large task rather than letting smaller ones pass it', async () => {
    const admission = new FairAdmission({ capacity: 3, perKey: 3, queuePerKey: 10, maxWaitMs: 60_000 });
    const small = [gate(), gate()];
    const smallRuns = small.map((g) => admission.run('A', 1, g.task));
    const large = gate();
    const largeRun = admission.run('B', 3, large.task);
    await tick();
    const later = gate();
    const laterRun = admission.run('A', 1, later.task);
    small[0]?.finish();
    await tick();
    // Two units free of the three B needs: nobody takes them while B waits ...
    expect([large.started(), later.started()]).toEqual([false, false]);
    small[1]?.finish();
    await tick();
    // ... and B runs once all three are free; A's later task waits for B.
    expect([large.started(), later.started()]).toEqual([true, false]);
    large.finish();
    await largeRun;
    await tick();
    expect(later.started()).toBe(true);
    later.finish();
    await Promise.all([...smallRuns, laterRun]);
  });

  it('counts a task costing more than a key may run as the key\'s whole share, so that it can run', async () => {
    const admission = new FairAdmission({ capacity: 4000, perKey: 2000, queuePerKey: 0, maxWaitMs: 60_000 });
    await expect(admission.run('B', 5000, async () => admission.load)).resolves.toEqual({ running: 2000, waiting: 0 });
  });

  it('refuses at once beyond the queue and after the longest wait, without running the task', async () => {
    const admission = new FairAdmission({ capacity: 2, perKey: 1, queuePerKey: 1, maxWaitMs: 50 });
    const running = gate();
    const first = admission.run('B', 1, running.task);
    const queued = gate();
    const second = admission.run('B', 1, queued.task);
    const overflow = gate();
    await expect(admission.run('B', 1, overflow.task)).rejects.toEqual(new AdmissionRefused('queue-full'));
    await expect(second).rejects.toEqual(new AdmissionRefused('timeout'));
    expect(queued.started()).toBe(false);
    expect(overflow.started()).toBe(false);
    running.finish();
    await first;
    expect(admission.load).toEqual({ running: 0, waiting: 0 });
  });

  it('drops a waiter whose signal aborts, and frees the capacity of a task that throws', async () => {
    const admission = new FairAdmission({ capacity: 1, perKey: 1, queuePerKey: 5, maxWaitMs: 60_000 });
    const running = gate();
    const first = admission.run('B', 1, running.task);
    const gone = new AbortController();
    const abandoned = admission.run('A', 1, async () => 'never', gone.signal);
    gone.abort();
    await expect(abandoned).rejects.toEqual(new AdmissionRefused('aborted'));
    expect(admission.load).toEqual({ running: 1, waiting: 0 });
    running.finish();
    await first;
    await expect(admission.run('A', 1, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(admission.run('A', 1, async () => 'next')).resolves.toBe('next');
    expect(admission.load).toEqual({ running: 0, waiting: 0 });
  });
});
