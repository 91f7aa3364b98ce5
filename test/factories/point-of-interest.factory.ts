import type { PointOfInterest } from '@tracking/contracts';
import type { TestTenant } from './identity.factory.js';
import type { TestStack } from '../support/stack.js';

export interface PointOfInterestOverrides {
  /** Index into `tenant.accountIds`; default the first account. */
  account?: number;
  /** Merged over a valid body; a key set to `undefined` is left out. */
  body?: Record<string, unknown>;
}

let pointOfInterestCounter = 0;

/** A valid creation body; every field has a sensible value, `overrides` replace or remove them. */
export function pointOfInterestBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const body: Record<string, unknown> = {
    name: `Warehouse ${++pointOfInterestCounter}`,
    kind: 'Warehouse',
    location: { lat: 51.9225, lng: 4.47917 },
    ...overrides,
  };
  for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
  return body;
}

/** A point of interest created through the real endpoint, with its ETag; fails loudly when refused. */
export async function createPointOfInterest(
  stack: TestStack,
  tenant: TestTenant,
  overrides: PointOfInterestOverrides = {},
): Promise<{ pointOfInterest: PointOfInterest; etag: string; path: string }> {
  const accountId = tenant.accountIds[overrides.account ?? 0];
  const response = await stack.request('POST', `/v1/accounts/${accountId}/points-of-interest`, {
    token: tenant.token,
    body: pointOfInterestBody(overrides.body),
  });
  if (response.status !== 201) throw new Error(`point of interest creation failed: ${response.status} ${response.text}`);
  const etag = response.headers.get('etag');
  const path = response.headers.get('location');
  if (etag === null || path === null) throw new Error(`point of interest creation answered without ETag or Location: ${response.text}`);
  return { pointOfInterest: response.body as PointOfInterest, etag, path };
}
