import { describe, expect, it } from 'vitest';
import { AdmissionRefused, FairAdmission } from './fair-admission.js';

/** A task that runs until `finish` is called; `started` tells whether it was admitted. */
function gate(): { task: () => Promise<string>; finish: () => void; started: () => boolean } {
  let finish = () => {};
  let started = false;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    task: async () => {
      started = true;
      await done;
      return 'done';
    },
    finish: () => finish(),
    started: () => started,
  };
}

/** Lets settled promises run their callbacks. */
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('FairAdmission', () => {
  it("bounds one key's running tasks below the capacity, so another key is admitted at once", async () => {
    const admission = new FairAdmission({ capacity: 3, perKey: 2, queuePerKey: 10, maxWaitMs: 60_000 });
    const flood = Array.from({ length: 5 }, gate);
    const floodRuns = flood.map((g) => admission.run('B', g.task));
    await tick();
    expect(flood.map((g) => g.started())).toEqual([true, true, false, false, false]);
    const other = gate();
    const otherRun = admission.run('A', other.task);
    await tick();
    expect(other.started()).toBe(true);
    expect(admission.load).toEqual({ running: 3, waiting: 3 });
    other.finish();
    await expect(otherRun).resolves.toBe('done');
    for (const g of flood) g.finish();
    await expect(Promise.all(floodRuns)).resolves.toEqual(['done', 'done', 'done', 'done', 'done']);
    expect(admission.load).toEqual({ running: 0, waiting: 0 });
  });

  it('gives a freed slot to the key holding the fewest slots, not to the oldest waiter of a flooding key', async () => {
    const admission = new FairAdmission({ capacity: 2, perKey: 2, queuePerKey: 10, maxWaitMs: 60_000 });
    const b = Array.from({ length: 4 }, gate);
    const bRuns = b.map((g) => admission.run('B', g.task));
    await tick();
    const a = gate();
    const aRun = admission.run('A', a.task);
    await tick();
    expect(a.started()).toBe(false);
    b[0]?.finish();
    await tick();
    // B's third batch waited longer, but A holds no slot.
    expect(a.started()).toBe(true);
    expect(b[2]?.started()).toBe(false);
    a.finish();
    await aRun;
    await tick();
    expect(b[2]?.started()).toBe(true);
    for (const g of b) g.finish();
    await Promise.all(bRuns);
  });

  it('refuses at once beyond the queue and after the longest wait, without running the task', async () => {
    const admission = new FairAdmission({ capacity: 2, perKey: 1, queuePerKey: 1, maxWaitMs: 50 });
    const running = gate();
    const first = admission.run('B', running.task);
    const queued = gate();
    const second = admission.run('B', queued.task);
    const overflow = gate();
    await expect(admission.run('B', overflow.task)).rejects.toEqual(new AdmissionRefused('queue-full'));
    await expect(second).rejects.toEqual(new AdmissionRefused('timeout'));
    expect(queued.started()).toBe(false);
    expect(overflow.started()).toBe(false);
    running.finish();
    await first;
    expect(admission.load).toEqual({ running: 0, waiting: 0 });
  });

  it('drops a waiter whose signal aborts, and frees the slot of a task that throws', async () => {
    const admission = new FairAdmission({ capacity: 1, perKey: 1, queuePerKey: 5, maxWaitMs: 60_000 });
    const running = gate();
    const first = admission.run('B', running.task);
    const gone = new AbortController();
    const abandoned = admission.run('A', async () => 'never', gone.signal);
    gone.abort();
    await expect(abandoned).rejects.toEqual(new AdmissionRefused('aborted'));
    expect(admission.load).toEqual({ running: 1, waiting: 0 });
    running.finish();
    await first;
    await expect(admission.run('A', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(admission.run('A', async () => 'next')).resolves.toBe('next');
    expect(admission.load).toEqual({ running: 0, waiting: 0 });
  });
});
