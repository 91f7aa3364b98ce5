import { ThrottledLog } from '../protection/redis/throttled-log.js';

/** How often one kind of failure is written to the log at most. */
export const REPEATED_LOG_INTERVAL_MS = 10000;

/**
 * `ThrottledLog` per kind of line (an error code and message, a route and status): during an outage every
 * request fails alike, and a line per request (thousands a second) buries everything else. The first of a
 * kind is written at once, then at most one per interval, carrying how many were left out since. At most
 * `capacity` kinds are tracked; the oldest is forgotten first.
 */
export class RepeatedLog {
  private readonly kinds = new Map<string, ThrottledLog>();

  constructor(
    private readonly intervalMs = REPEATED_LOG_INTERVAL_MS,
    private readonly capacity = 1000,
  ) {}

  /** Calls `write` now, with the count left out since its last line, or counts this one for the next. */
  report(kind: string, write: (suppressedSinceLast: number) => void): void {
    let log = this.kinds.get(kind);
    if (log === undefined) {
      if (this.kinds.size >= this.capacity) {
        const oldest = this.kinds.keys().next().value;
        if (oldest !== undefined) this.kinds.delete(oldest);
      }
      log = new ThrottledLog(this.intervalMs);
      this.kinds.set(kind, log);
    }
    log.report(write);
  }
}
