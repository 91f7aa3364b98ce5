/**
 * Token requests that passed the `token-failures` check on this replica and whose answer is not known
 * yet, counted per failure bucket. Each counts as a possible failure: the check lets a request through
 * only if the bucket has room for the failures already counted plus every pending attempt plus this one,
 * so a parallel burst of wrong secrets still gets no more hashes than the bucket allows. A request that
 * finds no room only because attempts are pending waits for them to settle (good ones are not failures)
 * instead of getting a 429 naming failures that never happened.
 *
 * Hand-written: a counter per key with a wake-up on every change is all it is, and the waits re-check
 * the shared bucket in Redis, which a semaphore library would not know about.
 */
export class PendingAttempts {
  private readonly counts = new Map<string, number>();
  private waiters: (() => void)[] = [];

  /** The most attempts pending in any of these buckets. */
  count(subjects: readonly string[]): number {
    return Math.max(0, ...subjects.map((subject) => this.counts.get(subject) ?? 0));
  }

  add(subjects: readonly string[]): void {
    for (const subject of subjects) this.counts.set(subject, (this.counts.get(subject) ?? 0) + 1);
  }

  /**
   * An attempt settled (counted as a failure or not), or a check withdrew its place. With `wake`, every
   * waiter looks again; a check refused behind others withdraws without waking them, or the waiters
   * would wake each other in turn and each take a place ahead of the rest, none getting in.
   */
  remove(subjects: readonly string[], wake = true): void {
    for (const subject of subjects) {
      const left = (this.counts.get(subject) ?? 0) - 1;
      if (left > 0) this.counts.set(subject, left);
      else this.counts.delete(subject);
    }
    if (!wake) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves when an attempt settles, or after `timeoutMs`, whichever comes first. */
  settled(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, timeoutMs));
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
