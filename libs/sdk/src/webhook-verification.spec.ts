import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError } from './webhook-verification.js';

/** A secret as the API makes one: `whsec_` and the base64 of 32 random bytes. */
const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed with the secret's bytes, as the API reference specifies. */
function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

function delivery(secrets: string[], overrides: { timestamp?: number; id?: string } = {}) {
  const event = { id: '0190a4a0-7f4a-7e6d-9b3c-5d4e3f2a1b0c', type: 'shipment.started', occurredAt: '2026-01-01T00:00:00.000Z', accountId: 'a', data: { id: 's' } };
  const body = JSON.stringify(event);
  const timestamp = overrides.timestamp ?? Math.floor(Date.now() / 1000);
  const id = overrides.id ?? event.id;
  const headers = {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => signature(secret, id, timestamp, body)).join(' '),
  };
  return { event, body, headers };
}

describe('verifyWebhook', () => {
  it('answers the event of a delivery signed with the secret, from a plain object, Node headers or Headers, string or bytes', () => {
    const secret = newSecret();
    const { event, body, headers } = delivery([secret]);
    expect(verifyWebhook(secret, headers, body)).toEqual(event);
    const nodeStyle = { ...headers, 'Webhook-Signature': [headers['webhook-signature']], 'webhook-signature': undefined };
    expect(verifyWebhook(secret, nodeStyle, new TextEncoder().encode(body))).toEqual(event);
    expect(verifyWebhook(secret, new Headers(headers), body)).toEqual(event);
  });

  it('accepts either secret while a rotated secret overlaps (two signatures)', () => {
    const [previous, current] = [newSecret(), newSecret()];
    const { event, body, headers } = delivery([current, previous]);
    expect(verifyWebhook(previous, headers, body)).toEqual(event);
    expect(verifyWebhook(current, headers, body)).toEqual(event);
  });

  it('refuses another secret, a changed body, an old or future timestamp, a missing header, and a body of another event', () => {
    const secret = newSecret();
    const { body, headers } = delivery([secret]);
    const refusals: [string, () => unknown][] = [
      ['another secret', () => verifyWebhook(newSecret(), headers, body)],
      ['a changed body', () => verifyWebhook(secret, headers, body.replace('started', 'cancelled'))],
      ['an old timestamp', () => verifyWebhook(secret, delivery([secret], { timestamp: Math.floor(Date.now() / 1000) - 600 }).headers, body)],
      ['a future timestamp', () => verifyWebhook(secret, delivery([secret], { timestamp: Math.floor(Date.now() / 1000) + 600 }).headers, body)],
      ['no signature', () => verifyWebhook(secret, { ...headers, 'webhook-signature': undefined }, body)],
      ['no id', () => verifyWebhook(secret, { ...headers, 'webhook-id': undefined }, body)],
      ['a signed id that is not the event', () => verifyWebhook(secret, delivery([secret], { id: 'other' }).headers, body)],
    ];
    for (const [name, attempt] of refusals) expect(attempt, name).toThrow(WebhookVerificationError);
  });
});
