import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Webhook } from '@tracking/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { createWebhook, sendTestPing } from '../factories/webhook.factory.js';
import { eventually } from '../support/eventually.js';
import { connectOms } from '../support/oms-database.js';
import { TestStack } from '../support/stack.js';

/*
 * Who sees a webhook's URL whole (docs/webhooks.md, "Who sees the URL"): Admins and Operators; Viewers
 * and every event (`webhook.disabled`, which every `*` webhook of the account receives and every Viewer
 * reads in the feed) see it without user info, query and fragment. And the answers that carry the secret
 * (create, rotate-secret) are `Cache-Control: no-store`, replays included.
 */

describe('webhook URLs and secrets: exposure', { timeout: 120000 }, () => {
  let stack: TestStack;
  let oms: pg.Client;
  let tenant: TestTenant;
  let viewer: string;
  let operator: string;
  let server: Server;
  const received: { path: string; headers: IncomingHttpHeaders; body: string }[] = [];
  /** Requests to paths starting with /failing are answered 500, the others 204. */
  const port = () => (server.address() as AddressInfo).port;

  beforeAll(async () => {
    stack = await TestStack.start({
      workers: 1,
      env: {
        WEBHOOK_ALLOW_INSECURE: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_TIMEOUT_MS: '1000',
        WEBHOOK_LEASE_MS: '5000',
        WEBHOOK_RETRY_SCHEDULE: '100ms,100ms',
        WEBHOOK_DISABLE_AFTER_MS: '1500',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        OUTBOX_POLL_INTERVAL_MS: '100',
      },
    });
    oms = await connectOms(stack);
    tenant = await createTenant(stack);
    const token = async (role: 'Viewer' | 'Operator') => {
      const application = await stack.identity.createApplication(tenant.tenantId, role, role, '*');
      return issueToken(stack, tenant.tenantId, application.applicationId, application.applicationSecret);
    };
    viewer = await token('Viewer');
    operator = await token('Operator');
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString() });
        response.writeHead(request.url?.startsWith('/failing') ? 500 : 204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  }, 120000);

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await oms?.end();
    await stack?.stop();
  });

  const base = () => `/v1/accounts/${tenant.accountIds[0]}/webhooks`;

  it('shows Viewers the URL without user info, query and fragment; Admins and Operators see it whole', async () => {
    const url = 'https://1.1.1.1/hooks/in?token=s3cret&x=1#part';
    const { webhook, path } = await createWebhook(stack, tenant, { body: { url } });
    expect(webhook.url).toBe(url);
    // A URL with user info is refused at create; one stored before that rule (or by hand) is redacted too.
    const { webhook: legacy } = await createWebhook(stack, tenant);
    await oms.query('UPDATE webhooks SET url = $2 WHERE id = $1', [legacy.id, 'https://user:pa55@1.1.1.1:8443/legacy?key=k']);
    for (const [token, expected, legacyUrl] of [
      [tenant.token, url, 'https://user:pa55@1.1.1.1:8443/legacy?key=k'],
      [operator, url, 'https://user:pa55@1.1.1.1:8443/legacy?key=k'],
      [viewer, 'https://1.1.1.1/hooks/in', 'https://1.1.1.1:8443/legacy'],
    ] as const) {
      const one = await stack.request('GET', path, { token });
      expect(one.status, one.text).toBe(200);
      expect(one.body.url).toBe(expected);
      const list = await stack.request('GET', `${base()}?limit=100`, { token });
      expect(list.status, list.text).toBe(200);
      const urls = Object.fromEntries((list.body.items as Webhook[]).map((w) => [w.id, w.url]));
      expect(urls).toEqual({ [webhook.id]: expected, [legacy.id]: legacyUrl });
    }
    // Nothing else in a Viewer's answer differs.
    const [whole, redacted] = await Promise.all([stack.request('GET', path, { token: tenant.token }), stack.request('GET', path, { token: viewer })]);
    expect(redacted.body).toEqual({ ...whole.body, url: 'https://1.1.1.1/hooks/in' });
    expect(JSON.stringify(redacted.body)).not.toContain('s3cret');
    await oms.query('DELETE FROM webhooks WHERE id = ANY ($1::uuid[])', [[webhook.id, legacy.id]]);
  });

  it('webhook.disabled carries the URL redacted, in the feed and to the webhooks that receive it', async () => {
    const failingUrl = `http://127.0.0.1:${port()}/failing?token=s3cret#f`;
    const { webhook, path } = await createWebhook(stack, tenant, { body: { url: failingUrl } });
    await createWebhook(stack, tenant, { body: { url: `http://127.0.0.1:${port()}/listener`, eventTypes: ['webhook.disabled'] } });
    await eventually(
      async () => {
        await sendTestPing(stack, tenant, path);
        return ((await stack.request('GET', path, { token: tenant.token })).body as Webhook).status;
      },
      (status) => status === 'Disabled',
      'the webhook disabled',
      30000,
    );
    const feed = await eventually(
      async () => (await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/events?type=webhook.disabled`, { token: viewer })).body.items as { id: string; data: Webhook }[],
      (items) => items.length === 1,
      'the webhook.disabled event in the feed',
    );
    const redacted = `http://127.0.0.1:${port()}/failing`;
    expect(feed[0]!.data).toMatchObject({ id: webhook.id, status: 'Disabled', url: redacted });
    const delivered = await eventually(
      () => received.filter((r) => r.path === '/listener' && r.headers['webhook-id'] === feed[0]!.id),
      (found) => found.length === 1,
      'the webhook.disabled delivery',
    );
    expect(delivered[0]!.body).not.toContain('s3cret');
    expect((JSON.parse(delivered[0]!.body) as { data: Webhook }).data.url).toBe(redacted);
    // The Admin still sees the whole URL.
    expect((await stack.request('GET', path, { token: tenant.token })).body.url).toBe(failingUrl);
  });

  it('answers create and rotate-secret, which carry the secret, with Cache-Control: no-store, replays included', async () => {
    const created = await stack.request('POST', base(), { token: tenant.token, body: { url: 'https://1.1.1.1/store', eventTypes: ['*'] }, headers: { 'Idempotency-Key': 'no-store-create' } });
    expect(created.status, created.text).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_/);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const replayed = await stack.request('POST', base(), { token: tenant.token, body: { url: 'https://1.1.1.1/store', eventTypes: ['*'] }, headers: { 'Idempotency-Key': 'no-store-create' } });
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.headers.get('cache-control')).toBe('no-store');
    const rotated = await stack.request('POST', `${base()}/${created.body.id}/rotate-secret`, { token: tenant.token });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
  });
});
