/**
 * Access tokens verified recently, each remembered until a given instant, at most `capacity` of them (the
 * oldest go first). Clients send the same token on every request; checking its signature each time is
 * the largest avoidable cost of an authenticated request.
 */
export class VerifiedTokens<T> {
  private readonly entries = new Map<string, { value: T; until: number }>();

  constructor(private readonly capacity = 10000) {}

  /** What was remembered for `token`, unless its time is up. */
  get(token: string): T | undefined {
    const entry = this.entries.get(token);
    if (entry === undefined) return undefined;
    if (entry.until > Date.now()) return entry.value;
    this.entries.delete(token);
    return undefined;
  }

  /** Remembers `value` for `token` until `until` (epoch milliseconds). */
  set(token: string, value: T, until: number): void {
    if (this.entries.size >= this.capacity) {
      // Maps iterate in insertion order: drop the oldest entry.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(token, { value, until });
  }
}
