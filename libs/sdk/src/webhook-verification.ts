import { Webhook } from 'standardwebhooks';
import type { TrackingEvent } from './types.js';

/** A webhook delivery that is not what the API sent: a bad or missing signature, an old timestamp, a changed body. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

/** Request headers as Fetch (`Headers`), Node's `IncomingHttpHeaders` or a plain object give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const NAMES = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/**
 * Checks a webhook delivery as Standard Webhooks prescribes (https://www.standardwebhooks.com/): the
 * `webhook-signature` (any of its space-separated signatures, so deliveries signed during a secret
 * rotation pass with either secret) is the HMAC-SHA256 of `id.timestamp.body` under `secret`
 * (`whsec_...`), and `webhook-timestamp` is within 5 minutes of now. Answers the event; throws
 * `WebhookVerificationError` otherwise. Pass the body exactly as received, before any JSON parsing.
 * Receivers dedupe on `event.id` (the `webhook-id`): deliveries are at least once.
 */
export function verifyWebhook<Data = unknown>(secret: string, headers: WebhookHeaders, rawBody: string | Uint8Array): TrackingEvent<Data> {
  const picked: Record<string, string> = {};
  for (const name of NAMES) {
    const value = headers instanceof Headers ? headers.get(name) : headerOf(headers, name);
    if (value === undefined || value === null) throw new WebhookVerificationError(`Missing the ${name} header`);
    picked[name] = value;
  }
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder('utf-8', { fatal: true }).decode(rawBody);
  let event: TrackingEvent<Data>;
  try {
    event = new Webhook(secret).verify(body, picked) as TrackingEvent<Data>;
  } catch (error) {
    // Our own class, so that the SDK's declarations do not depend on the library's (which need Node's types).
    throw new WebhookVerificationError(error instanceof Error ? error.message : String(error));
  }
  if (event === null || typeof event !== 'object' || event.id !== picked['webhook-id']) {
    throw new WebhookVerificationError('The body is not the event that webhook-id names');
  }
  return event;
}

function headerOf(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const key = Object.keys(headers).find((candidate) => candidate.toLowerCase() === name && headers[candidate] !== undefined);
  const value = key === undefined ? undefined : headers[key];
  return Array.isArray(value) ? value.join(' ') : value;
}
