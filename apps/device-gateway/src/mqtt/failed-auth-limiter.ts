import { LRUCache } from 'lru-cache';

export interface FailedAuthLimiterOptions {
  /** Failed authentications an address may have in one window before it is refused unchecked. */
  maxFailures: number;
  windowMs: number;
  /** Addresses remembered at once; the least recently failing are forgotten first. */
  capacity?: number;
}

/**
 * Counts failed authentications per remote address, so that someone guessing identifiers and secrets
 * (or IMEIs) is refused before each guess costs a credential lookup. A fixed window per address, kept in
 * an LRU cache with the window as its TTL, so memory stays bounded however many addresses fail.
 *
 * Per replica, not shared: behind an L4 load balancer each replica sees the guesser's connections and
 * counts its own. Many trackers behind one carrier NAT share an address; a window's limit therefore
 * counts failures only, and a device with a good credential behind a blocked address is let in again
 * once the window ends.
 */
export class FailedAuthLimiter {
  private readonly failures: LRUCache<string, { count: number }>;

  constructor(private readonly options: FailedAuthLimiterOptions) {
    this.failures = new LRUCache({ max: options.capacity ?? 100_000, ttl: options.windowMs, ttlAutopurge: false });
  }

  /** Whether `address` may try to authenticate now. */
  allows(address: string | undefined): boolean {
    if (address === undefined) return true;
    return (this.failures.get(address, { updateAgeOnGet: false })?.count ?? 0) < this.options.maxFailures;
  }

  /** Counts a failed authentication of `address`; the window starts at its first failure. */
  failed(address: string | undefined): void {
    if (address === undefined) return;
    const entry = this.failures.get(address, { updateAgeOnGet: false });
    if (entry) entry.count++;
    else this.failures.set(address, { count: 1 });
  }
}
