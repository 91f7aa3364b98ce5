const ETAG = Symbol.for('@tracking/sdk.etag');

/** Attaches the answer's `ETag` to a resource without making it part of its JSON. */
export function withETag<T>(resource: T, headers: Headers): T {
  const etag = headers.get('etag');
  if (etag !== null && resource !== null && typeof resource === 'object') {
    Object.defineProperty(resource, ETAG, { value: etag, enumerable: false });
  }
  return resource;
}

/**
 * The `ETag` the API sent with a resource this client returned (create, get, update), for
 * `update(id, patch, { ifMatch: etagOf(resource) })`; undefined for a resource read from a listing.
 */
export function etagOf(resource: object): string | undefined {
  return (resource as { [ETAG]?: string })[ETAG];
}

/** What a lifecycle action (204 without a body) answers: the resource's new `ETag`. */
export interface ActionResult {
  etag: string | undefined;
}
