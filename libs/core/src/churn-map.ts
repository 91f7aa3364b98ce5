/**
 * A string-keyed map for entries that come and go at a high rate and hold short-lived objects, such as
 * the requests waiting for their replies: the same operations as a `Map`, without what a long-lived `Map`
 * costs the garbage collector under such churn.
 *
 * V8 links a `Map`'s hash table, once replaced (the map grew, shrank, compacted its deleted entries or was
 * cleared), to its successor, for iterators still walking the old one, and the replaced table keeps its
 * entries. When a full collection has moved the current table to the old generation, each later table,
 * and every value it held, is reachable from there: the young collections keep and promote them all,
 * and only the next full collection frees them. What the entries reach (here a request's promises, its
 * reply bytes) piles up in the old generation until then, and the pile, `ArrayBuffer`s above all, sets
 * off the next full collection: about one a second in the gateway under load (docs/benchmark-history.md, the seventh
 * pass; `bench/map-churn.mjs` shows it). A dictionary-mode object replaces its tables without such a
 * link; `Object.create(null)` makes one.
 */
export class ChurnMap<V> {
  private entries: Record<string, V> = Object.create(null) as Record<string, V>;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    return this.entries[slot(key)];
  }

  has(key: string): boolean {
    return slot(key) in this.entries;
  }

  set(key: string, value: V): this {
    const name = slot(key);
    if (!(name in this.entries)) this.count++;
    this.entries[name] = value;
    return this;
  }

  delete(key: string): boolean {
    const name = slot(key);
    if (!(name in this.entries)) return false;
    delete this.entries[name];
    this.count--;
    return true;
  }

  /** The values, in no particular order. */
  values(): V[] {
    return Object.values(this.entries);
  }

  clear(): void {
    this.entries = Object.create(null) as Record<string, V>;
    this.count = 0;
  }
}

/**
 * The property name of `key`: prefixed, so that a key that looks like an array index ("12") is a named
 * property like any other rather than an element, which V8 stores apart (and may keep as a sparse array).
 */
function slot(key: string): string {
  return `_${key}`;
}
