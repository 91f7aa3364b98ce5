/**
 * Lets a repeated failure through to the log at most once per interval, with the number of
 * occurrences left out since: a Redis outage must not write one line per request.
 */
export class ThrottledLog {
  private lastWritten = Number.NEGATIVE_INFINITY;
  private suppressed = 0;

  constructor(private readonly intervalMs: number) {}

  /** Calls `write` now, or counts the occurrence for the next call that gets through. */
  report(write: (suppressedSinceLast: number) => void): void {
    const now = Date.now();
    if (now - this.lastWritten < this.intervalMs) {
      this.suppressed++;
      return;
    }
    const suppressed = this.suppressed;
    this.lastWritten = now;
    this.suppressed = 0;
    write(suppressed);
  }
}
