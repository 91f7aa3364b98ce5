/** Thrown by `BoundedSemaphore.run` when every slot is taken and the queue is full. */
export class SemaphoreFull extends Error {
  override name = 'SemaphoreFull';
}

/**
 * At most `concurrency` tasks at once, at most `queueLimit` more waiting (first come, first served);
 * a task beyond that is refused at once rather than piling up behind the others (`Infinity`: every task
 * waits its turn).
 *
 * Left only for the evaluation consumer (`apps/oms/src/evaluation/evaluation.consumer.ts`, which uses it
 * without a queue bound, that is as `p-limit` does); the other bounds moved to `p-limit` or a plain count.
 * Delete this file and its spec once that consumer no longer imports it.
 */
export class BoundedSemaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly concurrency: number,
    private readonly queueLimit: number,
  ) {}

  /** Tasks running now, and tasks waiting for a slot. */
  get load(): { active: number; waiting: number } {
    return { active: this.active, waiting: this.waiting.length };
  }

  /** Runs `task` in a slot; throws `SemaphoreFull` without running it when the queue is full. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active < this.concurrency) {
      this.active++;
    } else {
      if (this.waiting.length >= this.queueLimit) throw new SemaphoreFull('every slot is taken and the queue is full');
      // The finishing task hands its slot over, so `active` stays as it is.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
