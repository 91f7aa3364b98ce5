import type { RateLimit } from '@tracking/rate-limit';
import { entryBound } from '@tracking/core';
import { LRUCache } from 'lru-cache';

/**
 * Token buckets kept in this process (GCRA: one theoretical arrival time per key), for the limits that
 * are per replica by design: a device's messages (an MQTT or Teltonika device holds one connection, so
 * one replica sees all of them) and an address's failed authentications. Hand-written rather than the
 * shared Redis buckets: a Redis round trip per device message would cost more than the message, and
 * both limits protect this replica. The LRU bounds memory; a key falls out once its bucket is full again.
 */
export class LocalRateLimiter implements AddressLimiter {
  private readonly interval: number;
  private readonly capacity: number;
  private readonly buckets: LRUCache<string, number>;

  constructor(limit: RateLimit, maxKeys = 200_000) {
    this.interval = (limit.windowSeconds * 1000) / limit.quota;
    this.capacity = this.interval * limit.burst;
    this.buckets = new LRUCache(entryBound(maxKeys));
  }

  /** Charges one unit to `key`: 0 when allowed, else the seconds to wait before one more would be (nothing charged). */
  take(key: string, now = Date.now()): number {
    const tat = Math.max(this.buckets.get(key) ?? now, now);
    const debt = tat - now + this.interval;
    if (debt > this.capacity) return Math.max(1, Math.ceil((debt - this.capacity) / 1000));
    this.buckets.set(key, tat + this.interval, { ttl: Math.ceil(debt) });
    return 0;
  }

  /** Whether `key` has budget left, without charging it. */
  allows(key: string, now = Date.now()): boolean {
    const tat = Math.max(this.buckets.get(key) ?? now, now);
    return tat - now + this.interval <= this.capacity;
  }
}

/** What a listener needs of the failed-authentication limit: `allows` before checking, `take` after a failure. */
export interface AddressLimiter {
  allows(key: string): boolean;
  take(key: string): number;
}

/** What a listener needs of the connection budget: a place per open connection, given back once on close. */
export interface ConnectionSlots {
  tryAcquire(): boolean;
  release(): void;
}

/** The open connections of every listener of this replica, against DEVICE_MAX_CONNECTIONS. */
export class ConnectionBudget implements ConnectionSlots {
  private open = 0;

  constructor(private readonly max: number) {}

  /** Takes a place; false when the replica is full (the listener closes the new connection at once). */
  tryAcquire(): boolean {
    if (this.open >= this.max) return false;
    this.open += 1;
    return true;
  }

  release(): void {
    if (this.open > 0) this.open -= 1;
  }

  get count(): number {
    return this.open;
  }
}
