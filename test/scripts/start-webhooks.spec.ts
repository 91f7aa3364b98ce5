import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain ES module of the start script, without type declarations.
import { webhookNotice, webhookSettings } from '../../scripts/start-webhooks.mjs';

const notice = webhookNotice as (env: Record<string, string | undefined>) => string;

describe('npm start: the webhook notice says what the services were given', () => {
  it('unset: both allowed, and says so', () => {
    expect(webhookSettings({})).toEqual({ WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    expect(notice({})).toMatch(/may target http:\/\/ and local addresses/);
  });

  it('both false: says neither is allowed', () => {
    const text = notice({ WEBHOOK_ALLOW_INSECURE: 'false', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
    expect(text).toMatch(/need https:\/\/ URLs on public addresses/);
    expect(text).not.toMatch(/are true/);
  });

  it('one of them false: names only the one allowed', () => {
    expect(notice({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' })).toMatch(/may target http:\/\/ URLs here .* but not local or private addresses/);
    expect(notice({ WEBHOOK_ALLOW_INSECURE: 'false' })).toMatch(/may target local and private addresses here .* over https:\/\/ only/);
  });

  it('empty is the services’ default, false', () => {
    expect(notice({ WEBHOOK_ALLOW_INSECURE: '', WEBHOOK_ALLOW_PRIVATE_NETWORKS: '' })).toMatch(/need https:\/\//);
  });
});
