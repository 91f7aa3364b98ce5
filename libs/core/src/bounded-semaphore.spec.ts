import { describe, expect, it } from 'vitest';
import { BoundedSemaphore, SemaphoreFull } from './bounded-semaphore.js';

/** A task that ends when the test says so. */
function gatedTask() {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  let started = false;
  return {
    run: async () => {
      started = true;
      await done;
      return 'ran';
    },
    finish: () => finish(),
    get started() {
      return started;
    },
  };
}

describe('BoundedSemaphore', () => {
  it('runs at most `concurrency` tasks, queues up to `queueLimit` and refuses the rest', async () => {
    const semaphore = new BoundedSemaphore(2, 1);
    const tasks = [gatedTask(), gatedTask(), gatedTask()];
    const results = tasks.map((task) => semaphore.run(task.run));
    await Promise.resolve();
    expect(tasks.map((task) => task.started)).toEqual([true, true, false]);
    expect(semaphore.load).toEqual({ active: 2, waiting: 1 });
    await expect(semaphore.run(async () => 'never')).rejects.toBeInstanceOf(SemaphoreFull);

    tasks[0]!.finish();
    await results[0];
    await Promise.resolve();
    expect(tasks[2]!.started).toBe(true);
    expect(semaphore.load).toEqual({ active: 2, waiting: 0 });
    tasks[1]!.finish();
    tasks[2]!.finish();
    await expect(Promise.all(results)).resolves.toEqual(['ran', 'ran', 'ran']);
    expect(semaphore.load).toEqual({ active: 0, waiting: 0 });
  });

  it('frees the slot of a task that throws', async () => {
    const semaphore = new BoundedSemaphore(1, 0);
    await expect(semaphore.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(semaphore.run(async () => 'next')).resolves.toBe('next');
  });
});
