import type { Delivery, WebhookWithSecret } from '@tracking/contracts';
import type { TestStack } from '../support/stack.js';
import type { TestTenant } from './identity.factory.js';

/**
 * A public IPv4 literal: it passes the SSRF policy without a resolver (test machines may have no DNS),
 * and nothing in the tests sends to it.
 */
export const PUBLIC_WEBHOOK_URL = 'https://1.1.1.1/tracking-test-hooks';

export interface WebhookOverrides {
  /** Index into `tenant.accountIds`; default the first account. */
  account?: number;
  /** Merged over a valid body; a key set to `undefined` is left out. */
  body?: Record<string, unknown>;
}

/** A valid creation body; `overrides` replace or remove fields. */
export function webhookBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const body: Record<string, unknown> = { url: PUBLIC_WEBHOOK_URL, eventTypes: ['*'], ...overrides };
  for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
  return body;
}

/** A webhook created through the real endpoint, with its secret and ETag; fails loudly when refused. */
export async function createWebhook(
  stack: TestStack,
  tenant: TestTenant,
  overrides: WebhookOverrides = {},
): Promise<{ webhook: WebhookWithSecret; etag: string; path: string }> {
  const accountId = tenant.accountIds[overrides.account ?? 0];
  const response = await stack.request('POST', `/v1/accounts/${accountId}/webhooks`, { token: tenant.token, body: webhookBody(overrides.body) });
  if (response.status !== 201) throw new Error(`webhook creation failed: ${response.status} ${response.text}`);
  const etag = response.headers.get('etag');
  const path = response.headers.get('location');
  if (etag === null || path === null) throw new Error(`webhook creation answered without ETag or Location: ${response.text}`);
  return { webhook: response.body as WebhookWithSecret, etag, path };
}

/** A `webhook.test` delivery of the webhook at `path`, through the real endpoint. */
export async function sendTestPing(stack: TestStack, tenant: TestTenant, path: string): Promise<Delivery> {
  const response = await stack.request('POST', `${path}/test`, { token: tenant.token });
  if (response.status !== 202) throw new Error(`test ping failed: ${response.status} ${response.text}`);
  return response.body as Delivery;
}
