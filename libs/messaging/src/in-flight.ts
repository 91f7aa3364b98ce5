/** Counts work in progress and lets a shutdown wait until none is left. */
export class InFlight {
  private count = 0;
  private waiters: (() => void)[] = [];

  get size(): number {
    return this.count;
  }

  begin(): void {
    this.count++;
  }

  end(): void {
    this.count--;
    if (this.count === 0) for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves once nothing is in flight (at once if nothing is). */
  idle(): Promise<void> {
    return this.count === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}
