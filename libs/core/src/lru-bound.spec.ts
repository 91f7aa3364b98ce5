import { LRUCache } from 'lru-cache';
import { describe, expect, it } from 'vitest';
import { entryBound } from './lru-bound.js';

describe('entryBound', () => {
  it('holds at most the given entries, evicting the least recently used first', () => {
    const cache = new LRUCache<string, number>(entryBound(3));
    for (const key of ['a', 'b', 'c']) cache.set(key, 1);
    cache.get('a');
    cache.set('d', 1);
    expect([...cache.keys()].sort()).toEqual(['a', 'c', 'd']);
    for (let i = 0; i < 100; i++) cache.set(`k${i}`, i);
    expect(cache.size).toBe(3);
  });

  it('keeps a TTL, per cache and per entry', () => {
    // Not 0: lru-cache reads a start time of 0 as "no TTL".
    let now = 1000;
    const cache = new LRUCache<string, number>({ ...entryBound(10), ttl: 1000, ttlResolution: 0, perf: { now: () => now } });
    cache.set('cache ttl', 1);
    cache.set('own ttl', 2, { ttl: 5000 });
    now = 3000;
    expect(cache.get('cache ttl')).toBeUndefined();
    expect(cache.get('own ttl')).toBe(2);
  });
});
