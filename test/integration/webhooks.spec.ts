import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EVENT_TYPES } from '@tracking/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { createWebhook, PUBLIC_WEBHOOK_URL, sendTestPing, webhookBody } from '../factories/webhook.factory.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS, UUID_V7 } from '../support/http-assertions.js';
import { describePaging, expectCursorRefused } from '../support/paging-behaviour.js';
import {
  expectDeleteHonoursIfMatch,
  expectNotFound,
  expectPatchHonoursIfMatch,
  NOT_UUIDS,
  STRONG_ETAG,
  UNKNOWN_ID,
} from '../support/resource-assertions.js';
import { TestStack } from '../support/stack.js';

const FIELDS = ['id', 'url', 'description', 'eventTypes', 'status', 'disabledReason', 'createdAt', 'updatedAt'].sort();
const DELIVERY_FIELDS = ['id', 'eventId', 'eventType', 'status', 'attempts', 'attemptsTotal', 'nextAttemptAt'].sort();
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const DAY_MS = 24 * 60 * 60 * 1000;

/** URLs the SSRF policy refuses when private networks are not allowed, with the issue. */
const FORBIDDEN_URLS: [string, string][] = [
  ['https://127.0.0.1/hook', 'ForbiddenAddress'],
  ['https://127.8.9.10:8443/hook', 'ForbiddenAddress'],
  ['https://2130706433/hook', 'ForbiddenAddress'],
  ['https://localhost/hook', 'ForbiddenAddress'],
  ['https://LOCALHOST:9000/hook', 'ForbiddenAddress'],
  ['https://10.1.2.3/hook', 'ForbiddenAddress'],
  ['https://172.16.5.4/hook', 'ForbiddenAddress'],
  ['https://192.168.0.1/hook', 'ForbiddenAddress'],
  ['https://100.64.0.1/hook', 'ForbiddenAddress'],
  ['https://169.254.169.254/latest/meta-data/', 'ForbiddenAddress'],
  ['https://169.254.10.10/hook', 'ForbiddenAddress'],
  ['https://0.0.0.0/hook', 'ForbiddenAddress'],
  ['https://224.0.0.1/hook', 'ForbiddenAddress'],
  ['https://[::1]/hook', 'ForbiddenAddress'],
  ['https://[::]/hook', 'ForbiddenAddress'],
  ['https://[::ffff:127.0.0.1]/hook', 'ForbiddenAddress'],
  ['https://[::ffff:10.0.0.1]/hook', 'ForbiddenAddress'],
  ['https://[::ffff:a9fe:a9fe]/hook', 'ForbiddenAddress'],
  ['https://[fd00:ec2::254]/latest/meta-data/', 'ForbiddenAddress'],
  ['https://[fe80::1]/hook', 'ForbiddenAddress'],
  ['https://[fc00::5]/hook', 'ForbiddenAddress'],
  ['http://1.1.1.1/hook', 'InvalidFormat'],
  ['https://user:secret@1.1.1.1/hook', 'InvalidFormat'],
  ['https://no-such-host.invalid/hook', 'UnresolvableHost'],
];

/** A local HTTP receiver, for the stack that allows insecure and private URLs. */
async function startReceiver(): Promise<Server> {
  const server = createServer((_request, response) => response.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

describe('webhooks over HTTP', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let otherTenant: TestTenant;
  let oms: pg.Client;
  let base: string;
  let path: string;

  beforeAll(async () => {
    // WEBHOOK_ALLOW_INSECURE and WEBHOOK_ALLOW_PRIVATE_NETWORKS stay off: the production policy. Two OMS
    // replicas, so that concurrent creates race across processes.
    stack = await TestStack.start({ omsReplicas: 2 });
    // Account 0 for most tests, 1 as "another account of the same tenant", 2 for the limit, 3 and 4 for paging.
    tenant = await createTenant(stack, { accounts: 5 });
    otherTenant = await createTenant(stack);
    base = `/v1/accounts/${tenant.accountIds[0]}`;
    path = `${base}/webhooks`;
    oms = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
    await oms.connect();
  });
  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
  });

  const post = (body: unknown, at = path, token = tenant.token) => stack.request('POST', at, { token, body });
  const get = (at: string, token = tenant.token) => stack.request('GET', at, { token });
  const patch = (at: string, body: unknown, headers?: Record<string, string>) => stack.request('PATCH', at, { token: tenant.token, body, headers });
  const action = (at: string, token = tenant.token) => stack.request('POST', at, { token });
  /** Accounts for webhooks that need no particular account, a new one whenever the last one is full. */
  const pool = { account: -1, used: 20 };
  const create = async (body: Record<string, unknown> = {}, account?: number) => {
    if (account === undefined) {
      if (pool.used >= 20) {
        tenant.accountIds.push((await stack.identity.createAccount(tenant.tenantId, `Pool ${tenant.accountIds.length}`)).accountId);
        Object.assign(pool, { account: tenant.accountIds.length - 1, used: 0 });
      }
      pool.used++;
    }
    return createWebhook(stack, tenant, { account: account ?? pool.account, body });
  };
  const row = async (id: string) => (await oms.query('SELECT * FROM webhooks WHERE id = $1', [id])).rows[0];
  const deliveryRow = async (id: string) => (await oms.query('SELECT * FROM webhook_deliveries WHERE id = $1', [id])).rows[0];
  const countOf = async (accountId: string) =>
    Number((await oms.query('SELECT count(*) FROM webhooks WHERE account_id = $1', [accountId])).rows[0].count);

  describe('POST /webhooks', () => {
    it('answers 201 with the webhook and its secret, once; GET, list and PATCH never show the secret', async () => {
      const before = Date.now();
      const created = await post({ url: PUBLIC_WEBHOOK_URL, description: 'ERP', eventTypes: ['shipment.created', 'device.retired'] });
      expect(created.status, created.text).toBe(201);
      const webhook = created.body;
      expect(Object.keys(webhook).sort()).toEqual([...FIELDS, 'secret'].sort());
      expect(webhook).toMatchObject({
        url: PUBLIC_WEBHOOK_URL,
        description: 'ERP',
        eventTypes: ['shipment.created', 'device.retired'],
        status: 'Active',
        disabledReason: null,
      });
      expect(webhook.id).toMatch(UUID_V7);
      expect(webhook.createdAt).toMatch(TIMESTAMP_MS);
      expect(webhook.updatedAt).toBe(webhook.createdAt);
      expect(Date.parse(webhook.createdAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(webhook.secret).toMatch(SECRET);
      expect(Buffer.from(webhook.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
      expect(created.headers.get('location')).toBe(`${path}/${webhook.id}`);
      expect(created.headers.get('etag')).toMatch(STRONG_ETAG);
      expect((await row(webhook.id)).secret).toBe(webhook.secret);

      const { secret, ...shown } = webhook;
      const fetched = await get(`${path}/${webhook.id}`);
      expect(fetched.status).toBe(200);
      expect(fetched.body).toEqual(shown);
      expect(fetched.headers.get('etag')).toBe(created.headers.get('etag'));
      const listed = await get(`${path}?limit=100`);
      expect(listed.body.items).toContainEqual(shown);
      const patched = await patch(`${path}/${webhook.id}`, { description: 'ERP 2' });
      expect(patched.status).toBe(200);
      expect(Object.keys(patched.body).sort()).toEqual(FIELDS);
      for (const response of [fetched, listed, patched]) {
        expect(response.text).not.toContain(secret);
        expect(response.text).not.toContain('whsec_');
      }
    });

    it('gives every webhook a secret of its own, leaves description null by default and accepts every known type', async () => {
      const a = (await create({ eventTypes: [...EVENT_TYPES] })).webhook;
      const b = (await create({ description: undefined })).webhook;
      expect(a.secret).not.toBe(b.secret);
      expect(a.eventTypes).toEqual([...EVENT_TYPES]);
      expect(b.description).toBeNull();
      expect(b.eventTypes).toEqual(['*']);
    });

    it.each([
      ['a missing url', { url: undefined }, 'url', 'Required'],
      ['a null url', { url: null }, 'url', 'InvalidFormat'],
      ['a numeric url', { url: 42 }, 'url', 'InvalidFormat'],
      ['an empty url', { url: '' }, 'url', 'OutOfRange'],
      ['a url that is no URL', { url: 'hooks.example.com/x' }, 'url', 'InvalidFormat'],
      ['a url with a space', { url: 'https://1.1.1.1/a b' }, 'url', 'InvalidFormat'],
      ['a url with a leading space', { url: ' https://1.1.1.1/' }, 'url', 'InvalidFormat'],
      ['an ftp url', { url: 'ftp://1.1.1.1/x' }, 'url', 'InvalidFormat'],
      ['a javascript url', { url: 'javascript:alert(1)' }, 'url', 'InvalidFormat'],
      ['a url of 2001 characters', { url: `https://1.1.1.1/${'a'.repeat(2001 - 16)}` }, 'url', 'OutOfRange'],
      ['a description of 2001 characters', { description: 'd'.repeat(2001) }, 'description', 'OutOfRange'],
      ['a numeric description', { description: 7 }, 'description', 'InvalidFormat'],
      ['missing eventTypes', { eventTypes: undefined }, 'eventTypes', 'Required'],
      ['null eventTypes', { eventTypes: null }, 'eventTypes', 'InvalidFormat'],
      ['eventTypes as a string', { eventTypes: 'shipment.created' }, 'eventTypes', 'InvalidFormat'],
      ['empty eventTypes', { eventTypes: [] }, 'eventTypes', 'OutOfRange'],
      ['an unknown event type', { eventTypes: ['shipment.created', 'shipment.exploded'] }, 'eventTypes', 'InvalidFormat'],
      ['an event type in the wrong case', { eventTypes: ['Shipment.Created'] }, 'eventTypes', 'InvalidFormat'],
      ['a numeric event type', { eventTypes: [1] }, 'eventTypes', 'InvalidFormat'],
      ['"*" with other types', { eventTypes: ['*', 'shipment.created'] }, 'eventTypes', 'InvalidFormat'],
      ['a repeated event type', { eventTypes: ['shipment.created', 'shipment.created'] }, 'eventTypes', 'InvalidFormat'],
      ['more types than exist', { eventTypes: [...EVENT_TYPES, '*'] }, 'eventTypes', 'OutOfRange'],
      ['an unknown field', { colour: 'red' }, 'colour', 'UnknownField'],
      ['an id', { id: randomUUID() }, 'id', 'ReadOnly'],
      ['a status', { status: 'Disabled' }, 'status', 'ReadOnly'],
      ['a secret', { secret: 'whsec_AAAA' }, 'secret', 'ReadOnly'],
      ['a disabledReason', { disabledReason: 'x' }, 'disabledReason', 'ReadOnly'],
      ['a createdAt', { createdAt: '2025-01-01T00:00:00.000Z' }, 'createdAt', 'ReadOnly'],
    ])('refuses %s with 400 and creates nothing', async (_name, overrides, field, issue) => {
      const before = await countOf(tenant.accountIds[0]!);
      expectInvalidParameter(await post(webhookBody(overrides)), field, issue);
      expect(await countOf(tenant.accountIds[0]!)).toBe(before);
    });

    it('refuses a body that is not a JSON object', async () => {
      expectError(await stack.request('POST', path, { token: tenant.token, rawBody: '[]', headers: { 'content-type': 'application/json' } }), 400, 'MalformedRequest');
      expectError(await stack.request('POST', path, { token: tenant.token, rawBody: '{"url":', headers: { 'content-type': 'application/json' } }), 400, 'MalformedRequest');
    });
  });

  describe('SSRF policy (WEBHOOK_ALLOW_INSECURE and WEBHOOK_ALLOW_PRIVATE_NETWORKS off)', () => {
    it.each(FORBIDDEN_URLS)('refuses to create a webhook for %s (%s) and creates nothing', async (url, issue) => {
      const before = await countOf(tenant.accountIds[0]!);
      const response = await post(webhookBody({ url }));
      expectInvalidParameter(response, 'url', issue);
      expect(await countOf(tenant.accountIds[0]!)).toBe(before);
    });

    it('refuses the same URLs in a PATCH, leaving the webhook as it was', async () => {
      const { etag, path: at } = await create();
      for (const [url, issue] of FORBIDDEN_URLS) {
        expectInvalidParameter(await patch(at, { url, description: 'changed' }), 'url', issue);
      }
      const after = await get(at);
      expect(after.body.url).toBe(PUBLIC_WEBHOOK_URL);
      expect(after.body.description).toBeNull();
      expect(after.headers.get('etag')).toBe(etag);
      // A public address passes.
      const moved = await patch(at, { url: 'https://[2606:4700:4700::1111]:8443/hooks' });
      expect(moved.status, moved.text).toBe(200);
      expect(moved.body.url).toBe('https://[2606:4700:4700::1111]:8443/hooks');
    });

    it('answers the 404 of an unknown webhook before judging the URL', async () => {
      expectError(await patch(`${path}/${UNKNOWN_ID}`, { url: 'https://127.0.0.1/' }), 404, 'WebhookNotExists');
    });
  });

  describe('the development switches', () => {
    let devStack: TestStack;
    let devTenant: TestTenant;
    let receiver: Server;

    beforeAll(async () => {
      devStack = await TestStack.start({ env: { WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
      devTenant = await createTenant(devStack);
      receiver = await startReceiver();
    });
    afterAll(async () => {
      await new Promise((resolve) => receiver?.close(resolve));
      await devStack?.stop();
    });

    it('let a webhook point at a local http receiver, by address or by localhost, but never carry user info', async () => {
      const { port } = receiver.address() as AddressInfo;
      const at = `/v1/accounts/${devTenant.accountIds[0]}/webhooks`;
      for (const url of [`http://127.0.0.1:${port}/hook`, `http://localhost:${port}/hook`, 'https://[::1]/hook', 'http://169.254.169.254/']) {
        const response = await devStack.request('POST', at, { token: devTenant.token, body: webhookBody({ url }) });
        expect(response.status, `${url}: ${response.text}`).toBe(201);
        expect(response.body.url).toBe(url);
      }
      const withUser = await devStack.request('POST', at, { token: devTenant.token, body: webhookBody({ url: `http://a:b@127.0.0.1:${port}/` }) });
      expectInvalidParameter(withUser, 'url', 'InvalidFormat');
      const nowhere = await devStack.request('POST', at, { token: devTenant.token, body: webhookBody({ url: 'http://no-such-host.invalid/' }) });
      expectInvalidParameter(nowhere, 'url', 'UnresolvableHost');
    });
  });

  describe('GET /webhooks/{id}, PATCH and DELETE', () => {
    it('PATCH changes url, description and eventTypes, and sets description to null', async () => {
      const { webhook, path: at } = await create({ description: 'first', eventTypes: ['shipment.created'] });
      const changed = await patch(at, { url: 'https://8.8.8.8/new', description: null, eventTypes: ['*'] });
      expect(changed.status, changed.text).toBe(200);
      expect(changed.body).toMatchObject({ id: webhook.id, url: 'https://8.8.8.8/new', description: null, eventTypes: ['*'], status: 'Active' });
      expect(Date.parse(changed.body.updatedAt)).toBeGreaterThan(Date.parse(webhook.updatedAt) - 1);
      expect(changed.body.createdAt).toBe(webhook.createdAt);
      expect((await get(at)).body).toEqual(changed.body);
      // The secret is untouched by a PATCH.
      expect((await row(webhook.id)).secret).toBe(webhook.secret);
    });

    it('keeps the ETag for a PATCH that changes nothing, and honours If-Match', async () => {
      const { etag, path: at } = await create({ description: 'same' });
      const same = await patch(at, { description: 'same' });
      expect(same.headers.get('etag')).toBe(etag);
      await expectPatchHonoursIfMatch(
        (body, ifMatch) => patch(at, body, { 'if-match': ifMatch }),
        () => get(at),
        etag,
        [{ description: 'a' }, { description: 'b' }, { eventTypes: ['device.created'] }, { description: 'd' }],
      );
    });

    it.each([
      ['a null url', { url: null }, 'url', 'InvalidFormat'],
      ['a numeric url', { url: 1 }, 'url', 'InvalidFormat'],
      ['null eventTypes', { eventTypes: null }, 'eventTypes', 'InvalidFormat'],
      ['empty eventTypes', { eventTypes: [] }, 'eventTypes', 'OutOfRange'],
      ['an unknown event type', { eventTypes: ['order.created'] }, 'eventTypes', 'InvalidFormat'],
      ['a description of 2001 characters', { description: 'x'.repeat(2001) }, 'description', 'OutOfRange'],
      ['a status', { status: 'Active' }, 'status', 'ReadOnly'],
      ['a secret', { secret: 'whsec_x' }, 'secret', 'ReadOnly'],
      ['an unknown field', { enabled: true }, 'enabled', 'UnknownField'],
    ])('PATCH refuses %s', async (_name, body, field, issue) => {
      const { etag, path: at } = await create();
      expectInvalidParameter(await patch(at, body), field, issue);
      expect((await get(at)).headers.get('etag')).toBe(etag);
    });

    it('DELETE answers 204, removes the webhook and its deliveries, and honours If-Match', async () => {
      const { webhook, etag, path: at } = await create();
      const delivery = await sendTestPing(stack, tenant, at);
      await expectDeleteHonoursIfMatch(
        (ifMatch) => stack.request('DELETE', at, { token: tenant.token, headers: { 'if-match': ifMatch } }),
        () => get(at),
        () => patch(at, { description: 'changed' }),
        etag,
      );
      expect(await row(webhook.id)).toBeUndefined();
      expect(await deliveryRow(delivery.id)).toBeUndefined();
      expectError(await stack.request('DELETE', at, { token: tenant.token }), 404, 'WebhookNotExists');
    });
  });

  describe('GET /webhooks', () => {
    it('pages oldest first with limit, cursor and includeTotal, and shows webhooks created while paging later, once', async () => {
      const at = `/v1/accounts/${tenant.accountIds[3]}/webhooks`;
      expect((await get(at)).body).toEqual({ items: [], metadata: { nextCursor: null } });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await create({ description: `p${i}` }, 3)).webhook.id);
      const first = await get(`${at}?limit=2&includeTotal=true`);
      expect(first.body.items.map((w: { id: string }) => w.id)).toEqual(ids.slice(0, 2));
      expect(first.body.metadata).toEqual({ nextCursor: expect.any(String), total: 3 });
      ids.push((await create({ description: 'late' }, 3)).webhook.id);
      const second = await get(`${at}?limit=2&cursor=${encodeURIComponent(first.body.metadata.nextCursor)}`);
      expect(second.body.items.map((w: { id: string }) => w.id)).toEqual(ids.slice(2, 4));
      expect(second.body.metadata).toEqual({ nextCursor: null });
      for (const item of [...first.body.items, ...second.body.items]) expect(Object.keys(item).sort()).toEqual(FIELDS);
    });

    it.each([
      ['limit=0', 'limit', 'OutOfRange'],
      ['limit=101', 'limit', 'OutOfRange'],
      ['limit=abc', 'limit', 'InvalidFormat'],
      ['includeTotal=yes', 'includeTotal', 'InvalidFormat'],
      ['cursor=garbage', 'cursor', 'InvalidCursor'],
      ['status=Active', 'status', 'UnknownField'],
    ])('refuses ?%s', async (query, field, issue) => {
      expectInvalidParameter(await get(`${path}?${query}`), field, issue);
    });

    it("refuses a cursor of another account's webhooks or of a delivery log", async () => {
      const other = `/v1/accounts/${tenant.accountIds[3]}/webhooks`;
      await expectCursorRefused((query = '') => get(`${other}${query}`), (query = '') => get(`${path}${query}`));
    });
  });

  describe('POST /webhooks/{id}/rotate-secret', () => {
    it('answers 200 with a new secret; the old one becomes the previous secret for 24 hours, replacing an older one', async () => {
      const { webhook, etag, path: at } = await create();
      const before = Date.now();
      const rotated = await action(`${at}/rotate-secret`);
      expect(rotated.status, rotated.text).toBe(200);
      expect(Object.keys(rotated.body).sort()).toEqual([...FIELDS, 'secret'].sort());
      expect(rotated.body.secret).toMatch(SECRET);
      expect(rotated.body.secret).not.toBe(webhook.secret);
      expect(rotated.headers.get('etag')).toMatch(STRONG_ETAG);
      expect(rotated.headers.get('etag')).not.toBe(etag);
      let stored = await row(webhook.id);
      expect(stored.secret).toBe(rotated.body.secret);
      expect(stored.previous_secret).toBe(webhook.secret);
      const expires = (stored.previous_secret_expires_at as Date).getTime();
      expect(expires).toBeGreaterThanOrEqual(before + DAY_MS - 1000);
      expect(expires).toBeLessThanOrEqual(Date.now() + DAY_MS + 1000);

      const again = await action(`${at}/rotate-secret`);
      expect(again.status).toBe(200);
      stored = await row(webhook.id);
      expect(stored.secret).toBe(again.body.secret);
      expect(stored.previous_secret).toBe(rotated.body.secret);
      expect((stored.previous_secret_expires_at as Date).getTime()).toBeGreaterThanOrEqual(expires);
      expect(new Set([webhook.secret, rotated.body.secret, again.body.secret]).size).toBe(3);

      const fetched = await get(at);
      expect(fetched.text).not.toContain('whsec_');
      expect(fetched.headers.get('etag')).toBe(again.headers.get('etag'));
    });
  });

  describe('POST /webhooks/{id}/enable', () => {
    it('makes a Disabled webhook Active with no reason and no failure streak; an Active one stays as it is', async () => {
      const { webhook, path: at } = await create();
      await oms.query(
        "UPDATE webhooks SET status = 'Disabled', disabled_reason = 'Every delivery failed for 5 days', failing_since = now() - interval '6 days' WHERE id = $1",
        [webhook.id],
      );
      expect((await get(at)).body).toMatchObject({ status: 'Disabled', disabledReason: 'Every delivery failed for 5 days' });
      const enabled = await action(`${at}/enable`);
      expect(enabled.status, enabled.text).toBe(204);
      expect(enabled.text).toBe('');
      const after = await get(at);
      expect(after.body).toMatchObject({ status: 'Active', disabledReason: null });
      expect((await row(webhook.id)).failing_since).toBeNull();
      const etag = after.headers.get('etag');
      expect((await action(`${at}/enable`)).status).toBe(204);
      expect((await get(at)).headers.get('etag')).toBe(etag);
    });
  });

  describe('POST /webhooks/{id}/test and the delivery log', () => {
    it('records a Pending webhook.test delivery, due now, whatever the eventTypes, with the event as its payload', async () => {
      const { webhook, path: at } = await create({ eventTypes: ['device.retired'] });
      const before = Date.now();
      const response = await action(`${at}/test`);
      expect(response.status, response.text).toBe(202);
      const delivery = response.body;
      expect(response.headers.get('location')).toBe(`${at}/deliveries`);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(response.headers.get('etag')).toBeNull();
      expect(Object.keys(delivery).sort()).toEqual(DELIVERY_FIELDS);
      expect(delivery).toMatchObject({ eventType: 'webhook.test', status: 'Pending', attempts: [] });
      expect(delivery.id).toMatch(UUID_V7);
      expect(delivery.eventId).toMatch(UUID_V7);
      expect(delivery.eventId).not.toBe(delivery.id);
      expect(delivery.nextAttemptAt).toMatch(TIMESTAMP_MS);
      expect(Date.parse(delivery.nextAttemptAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(delivery.nextAttemptAt)).toBeLessThanOrEqual(Date.now() + 1000);

      const stored = await deliveryRow(delivery.id);
      expect(stored).toMatchObject({ webhook_id: webhook.id, event_id: delivery.eventId, event_type: 'webhook.test', status: 'Pending', attempt_count: 0, lease_until: null });
      expect(JSON.parse(stored.payload)).toEqual({
        id: delivery.eventId,
        type: 'webhook.test',
        occurredAt: expect.stringMatching(TIMESTAMP_MS),
        // The webhook's account: /v1/accounts/{accountId}/webhooks/{id}.
        accountId: at.split('/')[3],
        data: { webhookId: webhook.id },
      });
      expect(Object.keys(JSON.parse(stored.payload))).toEqual(['id', 'type', 'occurredAt', 'accountId', 'data']);

      const second = (await action(`${at}/test`)).body;
      expect(second.eventId).not.toBe(delivery.eventId);
      const log = await get(`${at}/deliveries`);
      expect(log.status).toBe(200);
      expect(log.body).toEqual({ items: [delivery, second], metadata: { nextCursor: null } });
    });

    describePaging('GET /webhooks/{id}/deliveries', 'status', () => ({
      newCollection: async () => (await create({}, 4)).path + '/deliveries',
      create: async (deliveries) => sendTestPing(stack, tenant, deliveries.replace(/\/deliveries$/, '')),
      list: (deliveries, query = '') => get(`${deliveries}${query}`),
    }));

    it("refuses a cursor of another webhook's delivery log", async () => {
      const a = (await create({}, 3)).path;
      const b = (await create({}, 3)).path;
      for (let i = 0; i < 2; i++) await sendTestPing(stack, tenant, a);
      await expectCursorRefused((query = '') => get(`${a}/deliveries${query}`), (query = '') => get(`${b}/deliveries${query}`));
    });
  });

  describe('POST /webhooks/{id}/deliveries/{deliveryId}/redeliver', () => {
    it('makes a Failed delivery Pending and due now, with no lease and a fresh schedule, keeping its attempts', async () => {
      const { path: at } = await create();
      const delivery = await sendTestPing(stack, tenant, at);
      const attempts = [
        { at: '2025-11-22T08:30:00.000Z', statusCode: 500, durationMs: 120, error: 'HTTP 500' },
        { at: '2025-11-22T08:30:05.000Z', statusCode: null, durationMs: 10000, error: 'timeout' },
      ];
      await oms.query(
        "UPDATE webhook_deliveries SET status = 'Failed', next_attempt_at = NULL, attempts = $2, attempt_count = 8, lease_until = now() + interval '1 minute' WHERE id = $1",
        [delivery.id, JSON.stringify(attempts)],
      );
      expect((await get(`${at}/deliveries`)).body.items[0]).toEqual({ ...delivery, status: 'Failed', attempts, nextAttemptAt: null });

      const before = Date.now();
      const response = await action(`${at}/deliveries/${delivery.id}/redeliver`);
      expect(response.status, response.text).toBe(202);
      expect(response.headers.get('location')).toBe(`${at}/deliveries`);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(Object.keys(response.body).sort()).toEqual(DELIVERY_FIELDS);
      expect(response.body).toMatchObject({ id: delivery.id, eventId: delivery.eventId, eventType: 'webhook.test', status: 'Pending', attempts });
      expect(Date.parse(response.body.nextAttemptAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(response.body.nextAttemptAt)).toBeLessThanOrEqual(Date.now() + 1000);
      const stored = await deliveryRow(delivery.id);
      expect(stored).toMatchObject({ status: 'Pending', lease_until: null, attempt_count: 0, event_id: delivery.eventId });
      expect((await get(`${at}/deliveries`)).body.items).toEqual([response.body]);
    });

    it('clears the lease of a Pending delivery and makes it due now', async () => {
      const { path: at } = await create();
      const delivery = await sendTestPing(stack, tenant, at);
      await oms.query("UPDATE webhook_deliveries SET next_attempt_at = now() + interval '2 hours', lease_until = now() + interval '1 minute' WHERE id = $1", [delivery.id]);
      const response = await action(`${at}/deliveries/${delivery.id}/redeliver`);
      expect(response.status).toBe(202);
      expect(Date.parse(response.body.nextAttemptAt)).toBeLessThanOrEqual(Date.now() + 1000);
      expect((await deliveryRow(delivery.id)).lease_until).toBeNull();
    });

    it("answers 404 DeliveryNotExists for an unknown delivery, a non-UUID and another webhook's delivery; WebhookNotExists first", async () => {
      const a = await create();
      const b = await create();
      const ofB = await sendTestPing(stack, tenant, b.path);
      const redeliver = (webhookPath: string, deliveryId: string) => () => action(`${webhookPath}/deliveries/${deliveryId}/redeliver`);
      await expectNotFound([redeliver(a.path, UNKNOWN_ID), redeliver(a.path, ofB.id), ...NOT_UUIDS.map((id) => redeliver(a.path, id))], 'DeliveryNotExists');
      await expectNotFound([redeliver(`${path}/${UNKNOWN_ID}`, ofB.id), redeliver(`${path}/not-a-uuid`, 'not-a-uuid')], 'WebhookNotExists');
      expect((await deliveryRow(ofB.id)).status).toBe('Pending');
    });
  });

  describe('the limit of 20 webhooks per account', () => {
    it('holds under 30 concurrent creates on two OMS replicas: exactly 20 succeed, the others get 409 WebhookLimitReached; a delete makes room', async () => {
      const accountId = tenant.accountIds[2]!;
      const at = `/v1/accounts/${accountId}/webhooks`;
      const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => post(webhookBody({ description: `c${i}` }), at)));
      const statuses = responses.map((response) => response.status);
      expect(statuses.filter((status) => status === 201)).toHaveLength(20);
      expect(statuses.filter((status) => status === 409)).toHaveLength(10);
      for (const refused of responses.filter((response) => response.status === 409)) expectError(refused, 409, 'WebhookLimitReached');
      expect(await countOf(accountId)).toBe(20);
      expect((await get(`${at}?includeTotal=true&limit=1`)).body.metadata.total).toBe(20);

      expectError(await post(webhookBody(), at), 409, 'WebhookLimitReached');
      const victim = responses.find((response) => response.status === 201)!.body.id;
      expect((await stack.request('DELETE', `${at}/${victim}`, { token: tenant.token })).status).toBe(204);
      expect((await post(webhookBody(), at)).status).toBe(201);
      expectError(await post(webhookBody(), at), 409, 'WebhookLimitReached');
      // Another account of the tenant has its own 20.
      expect((await post(webhookBody(), `/v1/accounts/${tenant.accountIds[1]}/webhooks`)).status).toBe(201);
    });

    it('gives the last free place to exactly one of 12 concurrent creates', async () => {
      const accountId = (await stack.identity.createAccount(tenant.tenantId, 'Last place')).accountId;
      const at = `/v1/accounts/${accountId}/webhooks`;
      for (let i = 0; i < 19; i++) expect((await post(webhookBody(), at)).status).toBe(201);
      const statuses = (await Promise.all(Array.from({ length: 12 }, () => post(webhookBody(), at)))).map((response) => response.status);
      expect(statuses.sort()).toEqual([201, ...Array.from({ length: 11 }, () => 409)]);
      expect(await countOf(accountId)).toBe(20);
    });
  });

  describe('roles', () => {
    it('lets a Viewer read webhooks and deliveries, never their secret, and refuses it every change with 403', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      // The webhook the Viewer reads is made by an Admin application of the same tenant.
      const adminApp = await stack.identity.createApplication(viewer.tenantId, 'Admin', 'Admin', '*');
      const admin = { ...viewer, token: await issueToken(stack, viewer.tenantId, adminApp.applicationId, adminApp.applicationSecret) };
      const { webhook, path: at } = await createWebhook(stack, admin);
      const delivery = await sendTestPing(stack, admin, at);
      const collection = `/v1/accounts/${viewer.accountIds[0]}/webhooks`;

      for (const read of [collection, at, `${at}/deliveries`]) {
        const response = await get(read, viewer.token);
        expect(response.status, `${read}: ${response.text}`).toBe(200);
        expect(response.text).not.toContain(webhook.secret);
        expect(response.text).not.toContain('whsec_');
      }
      const writes: [string, string, unknown][] = [
        ['POST', collection, webhookBody()],
        ['PATCH', at, { description: 'x' }],
        ['DELETE', at, undefined],
        ['POST', `${at}/rotate-secret`, undefined],
        ['POST', `${at}/enable`, undefined],
        ['POST', `${at}/test`, undefined],
        ['POST', `${at}/deliveries/${delivery.id}/redeliver`, undefined],
      ];
      for (const [method, target, body] of writes) {
        expectError(await stack.request(method, target, { token: viewer.token, body }), 403, 'Forbidden');
      }
      expect((await row(webhook.id)).secret).toBe(webhook.secret);
      expect((await get(`${at}/deliveries`, viewer.token)).body.items).toHaveLength(1);
    });

    it('lets an Operator manage webhooks', async () => {
      const operator = await createTenant(stack, { role: 'Operator' });
      const { webhook, path: at } = await createWebhook(stack, operator);
      expect(webhook.secret).toMatch(SECRET);
      expect((await stack.request('PATCH', at, { token: operator.token, body: { description: 'op' } })).status).toBe(200);
      expect((await stack.request('POST', `${at}/rotate-secret`, { token: operator.token })).status).toBe(200);
      expect((await stack.request('POST', `${at}/enable`, { token: operator.token })).status).toBe(204);
      const delivery = await sendTestPing(stack, operator, at);
      expect((await stack.request('POST', `${at}/deliveries/${delivery.id}/redeliver`, { token: operator.token })).status).toBe(202);
      expect((await stack.request('DELETE', at, { token: operator.token })).status).toBe(204);
    });

    it('refuses an application without a role on the account with 403', async () => {
      const scoped = await createTenant(stack, { accounts: 2, roleAccounts: [0] });
      expectError(await stack.request('GET', `/v1/accounts/${scoped.accountIds[1]}/webhooks`, { token: scoped.token }), 403, 'Forbidden');
      expectError(await stack.request('POST', `/v1/accounts/${scoped.accountIds[1]}/webhooks`, { token: scoped.token, body: webhookBody() }), 403, 'Forbidden');
    });
  });

  describe('other accounts and tenants', () => {
    it("answers 404 on every route for another account's webhook and its deliveries, and changes nothing", async () => {
      const sibling = await create({ description: 'SIBLING' }, 1);
      const delivery = await sendTestPing(stack, tenant, sibling.path);
      const own = await create();
      const foreign = `${path}/${sibling.webhook.id}`;
      await expectNotFound(
        [
          () => get(foreign),
          () => patch(foreign, { description: 'x' }),
          () => stack.request('DELETE', foreign, { token: tenant.token }),
          () => action(`${foreign}/rotate-secret`),
          () => action(`${foreign}/enable`),
          () => action(`${foreign}/test`),
          () => get(`${foreign}/deliveries`),
          () => action(`${foreign}/deliveries/${delivery.id}/redeliver`),
          () => get(`${path}/${UNKNOWN_ID}`),
          ...NOT_UUIDS.map((id) => () => get(`${path}/${id}`)),
        ],
        'WebhookNotExists',
        sibling.webhook.secret,
      );
      await expectNotFound([() => action(`${own.path}/deliveries/${delivery.id}/redeliver`)], 'DeliveryNotExists');
      const stored = await row(sibling.webhook.id);
      expect(stored).toMatchObject({ secret: sibling.webhook.secret, description: 'SIBLING', previous_secret: null, version: 1 });
      expect(Number((await oms.query('SELECT count(*) FROM webhook_deliveries WHERE webhook_id = $1', [sibling.webhook.id])).rows[0].count)).toBe(1);
      expect((await get(`${path}?limit=100`)).text).not.toContain(sibling.webhook.id);
    });

    it("answers 400 AccountNotFound for another tenant's account, with nothing of it", async () => {
      const theirs = await createWebhook(stack, otherTenant, { body: { description: 'THEIRS' } });
      const at = `/v1/accounts/${otherTenant.accountIds[0]}/webhooks`;
      for (const [method, target] of [
        ['GET', at],
        ['POST', at],
        ['GET', `${at}/${theirs.webhook.id}`],
        ['POST', `${at}/${theirs.webhook.id}/rotate-secret`],
        ['POST', `${at}/${theirs.webhook.id}/test`],
      ] as const) {
        const response = await stack.request(method, target, { token: tenant.token, body: method === 'POST' && target === at ? webhookBody() : undefined });
        expectInvalidParameter(response, 'accountId', 'AccountNotFound');
        expect(response.text).not.toContain('THEIRS');
      }
      expect((await row(theirs.webhook.id)).secret).toBe(theirs.webhook.secret);
    });
  });
});
