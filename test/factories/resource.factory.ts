import type { TestStack } from '../support/stack.js';

/** Leaves out the keys of `body` set to `undefined`, so that overrides can remove fields. */
export function withoutUndefined(body: Record<string, unknown>): Record<string, unknown> {
  for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
  return body;
}

/** POSTs a resource through the real endpoint and returns it with its ETag and Location; fails loudly when refused. */
export async function createResource<T>(
  stack: TestStack,
  collectionPath: string,
  token: string,
  body: Record<string, unknown>,
  what: string,
): Promise<{ resource: T; etag: string; path: string }> {
  const response = await stack.request('POST', collectionPath, { token, body });
  if (response.status !== 201) throw new Error(`${what} creation failed: ${response.status} ${response.text}`);
  const etag = response.headers.get('etag');
  const path = response.headers.get('location');
  if (etag === null || path === null) throw new Error(`${what} creation answered without ETag or Location: ${response.text}`);
  return { resource: response.body as T, etag, path };
}
