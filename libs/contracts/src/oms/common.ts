import type { PageMetadata } from '../paging.js';

export type Metadata = Record<string, string | number | boolean>;

/** A single resource with the version the gateway turns into its `ETag`. */
export interface Versioned<T> {
  resource: T;
  version: number;
}

/** Every OMS collection answers `{items, metadata}` (spec: collection key `items`). */
export interface ItemPage<T> {
  items: T[];
  metadata: PageMetadata;
}

/** `If-Match` of a PATCH or DELETE, as a version; absent means unconditional. */
export interface Conditional {
  expectedVersion?: number;
}
