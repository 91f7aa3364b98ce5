/**
 * A string-keyed map for entries that come and go at a high rate and hold short-lived objects, such as
 * the requests waiting for their replies: the same operations as a `Map`, without what a long-lived `Map`
 * costs the garbage collector under such churn.
 *
 * Once a full collection has moved a long-lived `Map`'s table to the old generation, V8's link from each
 * replaced table to its successor keeps every later entry, and what it reaches, alive until the next full
 * collection, which the pile then sets off. A dictionary-mode object (`Object.create(null)`) has no such
 * link. Speed machinery (docs/architecture.md, "Speed machinery"): the simple version is a `Map`; why and
 * what it bought: docs/benchmark-history.md, "The seventh round", and `bench/map-churn.mjs`.
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
