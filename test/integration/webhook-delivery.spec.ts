import { type Delivery, EventType, type Webhook as WebhookResource } from '@tracking/contracts';
import { type EventRecord, recordEvents } from '@tracking/outbox';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOmsConfig } from '../../apps/oms/src/config.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createWebhook, sendTestPing } from '../factories/webhook.factory.js';
import { eventually as eventuallyWithin } from '../support/eventually.js';
import { connectOms } from '../support/oms-database.js';
import { killServices, spawnService } from '../support/processes.js';
import { TestStack } from '../support/stack.js';
import { WebhookReceiver as Receiver } from '../support/webhook-receiver.js';

/*
 * Webhook delivery (docs/webhook-delivery.md) against real local receivers: events written into
 * the OMS outbox travel relay -> JetStream -> the workers' dispatch consumer -> deliveries -> the sender.
 * The stack allows http and loopback URLs, and shortens the timeout, the retry schedule and the disabling.
 */

const TIMEOUT_MS = 1500;
const SCHEDULE = [200, 300, 400];
const DISABLE_AFTER_MS = 3000;
const DEADLINE_MS = 20000;

/** The shared `eventually` with this suite's deadline (deliveries wait out retry schedules). */
function eventually<T>(read: () => Promise<T> | T, done: (value: T) => boolean, what: string, deadlineMs = DEADLINE_MS): Promise<T> {
  return eventuallyWithin(read, done, what, deadlineMs);
}

describe('webhook delivery', { timeout: 90000 }, () => {
  let stack: TestStack;
  let oms: pg.Client;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    stack = await TestStack.start({
      workers: 1,
      env: {
        WEBHOOK_ALLOW_INSECURE: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
        // A killed sender's lease lapses well within the deadlines below.
        WEBHOOK_LEASE_MS: '8000',
        WEBHOOK_RETRY_SCHEDULE: SCHEDULE.map((ms) => `${ms}ms`).join(','),
        WEBHOOK_DISABLE_AFTER_MS: String(DISABLE_AFTER_MS),
        WEBHOOK_POLL_INTERVAL_MS: '50',
        WEBHOOK_CONCURRENCY: '16',
        WEBHOOK_CONCURRENCY_PER_WEBHOOK: '4',
        OUTBOX_POLL_INTERVAL_MS: '100',
      },
    });
    oms = await connectOms(stack);
  }, 120000);

  afterAll(async () => {
    await killServices();
    await Promise.all(receivers.map((r) => r.close()));
    await oms?.end();
    await stack?.stop();
  });

  async function receiver(): Promise<Receiver> {
    const created = await Receiver.start();
    receivers.push(created);
    return created;
  }

  /** A tenant with its own account and a webhook to `url`. */
  async function hook(url: string, eventTypes: string[] = ['*']): Promise<{ tenant: TestTenant; webhook: WebhookResource & { secret: string }; path: string }> {
    const tenant = await createTenant(stack);
    const { webhook, path } = await createWebhook(stack, tenant, { body: { url, eventTypes } });
    return { tenant, webhook, path };
  }

  async function writeEvents(records: EventRecord[]): Promise<string[]> {
    await oms.query('BEGIN');
    const events = await recordEvents(oms, records);
    await oms.query('COMMIT');
    return events.map((event) => event.id);
  }

  async function deliveries(tenant: TestTenant, path: string): Promise<Delivery[]> {
    const page = await stack.request('GET', `${path}/deliveries?limit=100`, { token: tenant.token });
    expect(page.status, page.text).toBe(200);
    return page.body.items as Delivery[];
  }

  async function settled(tenant: TestTenant, path: string, eventId: string): Promise<Delivery> {
    const found = await eventually(
      async () => (await deliveries(tenant, path)).find((d) => d.eventId === eventId),
      (d) => d !== undefined && d.status !== 'Pending',
      `delivery of ${eventId} settling`,
    );
    return found!;
  }

  function gaps(delivery: Delivery): number[] {
    const times = delivery.attempts.map((a) => Date.parse(a.at));
    return times.slice(1).map((t, i) => t - times[i]!);
  }

  it('defaults to a 10 s timeout and the 5 s ... 10 h schedule', () => {
    const config = readOmsConfig({});
    expect(config.WEBHOOK_TIMEOUT_MS).toBe(10000);
    expect(config.WEBHOOK_RETRY_SCHEDULE).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000].map((s) => s * 1000));
    expect(config.WEBHOOK_DISABLE_AFTER_MS).toBe(5 * 24 * 3600 * 1000);
    expect(() => readOmsConfig({ WEBHOOK_TIMEOUT_MS: '10000', WEBHOOK_LEASE_MS: '5000' })).toThrow(/WEBHOOK_LEASE_MS/);
  });

  it('delivers an event from the outbox to the webhooks that take its type, signed per Standard Webhooks', async () => {
    const target = await receiver();
    const { tenant, webhook, path } = await hook(target.url('/all'));
    const { path: shipmentsOnlyPath } = await createWebhook(stack, tenant, { body: { url: target.url('/devices'), eventTypes: ['device.created'] } });
    const [eventId] = await writeEvents([{ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, type: EventType.ShipmentCreated, data: { name: 'A' } }]);
    const [request] = await eventually(() => target.byId(eventId!), (r) => r.length > 0, 'the delivery');
    expect(request!.path).toBe('/all');
    expect(request!.headers['content-type']).toBe('application/json');
    const event = new Webhook(webhook.secret).verify(request!.body, request!.headers as Record<string, string>) as Record<string, unknown>;
    expect(event).toEqual({ id: eventId, type: 'shipment.created', occurredAt: expect.any(String), accountId: tenant.accountIds[0], data: { name: 'A' } });
    expect(request!.headers['webhook-id']).toBe(eventId);
    expect(Math.abs(Number(request!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    // A wrong secret does not verify.
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(request!.body, request!.headers as Record<string, string>)).toThrow();
    const delivery = await settled(tenant, path, eventId!);
    expect(delivery).toMatchObject({ status: 'Succeeded', eventType: 'shipment.created', nextAttemptAt: null });
    expect(delivery.attempts).toEqual([{ at: expect.any(String), statusCode: 204, durationMs: expect.any(Number), error: null }]);
    // The webhook that takes only device.created got nothing; another account's events reach neither.
    expect(await deliveries(tenant, shipmentsOnlyPath)).toEqual([]);
    const other = await createTenant(stack);
    const [foreign] = await writeEvents([{ tenantId: other.tenantId, accountId: other.accountIds[0]!, type: EventType.ShipmentCreated, data: {} }]);
    const [later] = await writeEvents([{ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, type: EventType.DeviceCreated, data: {} }]);
    await eventually(() => target.byId(later!), (r) => r.length === 2, 'the device event to both webhooks');
    expect(target.byId(foreign!)).toEqual([]);
  });

  it('delivers an event once per webhook however often the stream brings it', async () => {
    const target = await receiver();
    const { tenant, path } = await hook(target.url());
    const event = { id: uuidv7(), type: EventType.ShipmentUpdated, occurredAt: new Date().toISOString(), accountId: tenant.accountIds[0]!, data: {} };
    const envelope = JSON.stringify({ tenantId: tenant.tenantId, event });
    // The same message published twice (a relay retrying after its ack was lost, past the duplicate window).
    for (let i = 0; i < 2; i++) {
      await oms.query('INSERT INTO outbox (msg_id, subject, payload) VALUES ($1, $2, $3)', [event.id, `events.${tenant.tenantId}.${event.accountId}.${event.type}`, envelope]);
    }
    await settled(tenant, path, event.id);
    const rows = await oms.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = $1', [event.id]);
    expect(rows.rows[0].n).toBe(1);
    expect(target.byId(event.id)).toHaveLength(1);
  });

  it('signs with both secrets while a rotated one overlaps', async () => {
    const target = await receiver();
    const { tenant, webhook, path } = await hook(target.url());
    const rotated = await stack.request('POST', `${path}/rotate-secret`, { token: tenant.token });
    expect(rotated.status, rotated.text).toBe(200);
    const ping = await sendTestPing(stack, tenant, path);
    const [request] = await eventually(() => target.byId(ping.eventId), (r) => r.length > 0, 'the ping');
    const headers = request!.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [webhook.secret, rotated.body.secret as string]) {
      expect(new Webhook(secret).verify(request!.body, headers)).toEqual({ id: ping.eventId, type: 'webhook.test', occurredAt: expect.any(String), accountId: tenant.accountIds[0], data: { webhookId: webhook.id } });
    }
    // Once the previous secret expired, only the new one signs.
    await oms.query("UPDATE webhooks SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1", [webhook.id]);
    const second = await sendTestPing(stack, tenant, path);
    const [next] = await eventually(() => target.byId(second.eventId), (r) => r.length > 0, 'the second ping');
    expect((next!.headers['webhook-signature'] as string).split(' ')).toHaveLength(1);
    expect(() => new Webhook(webhook.secret).verify(next!.body, next!.headers as Record<string, string>)).toThrow();
    expect(new Webhook(rotated.body.secret as string).verify(next!.body, next!.headers as Record<string, string>)).toBeTruthy();
  });

  it('retries every step of the schedule, then fails, keeping each attempt with a truncated body', async () => {
    const target = await receiver();
    target.behave = (_request, response) => response.writeHead(500).end('x'.repeat(5000));
    const { tenant, path } = await hook(target.url());
    const ping = await sendTestPing(stack, tenant, path);
    const delivery = await settled(tenant, path, ping.eventId);
    expect(delivery.status).toBe('Failed');
    expect(delivery.nextAttemptAt).toBeNull();
    expect(delivery.attempts).toHaveLength(SCHEDULE.length + 1);
    for (const attempt of delivery.attempts) {
      expect(attempt.statusCode).toBe(500);
      expect(Buffer.byteLength(attempt.error!)).toBeLessThanOrEqual(1024);
      expect(attempt.error).toMatch(/^HTTP 500: x+$/);
    }
    gaps(delivery).forEach((gap, i) => {
      expect(gap).toBeGreaterThanOrEqual(SCHEDULE[i]!);
      expect(gap).toBeLessThan(SCHEDULE[i]! + 2000);
    });
    expect(target.byId(ping.eventId)).toHaveLength(SCHEDULE.length + 1);
  });

  it("honours Retry-After on 429 and 503, in seconds or as a date, and it replaces the step's delay", async () => {
    const target = await receiver();
    target.behave = (_request, response, count) => {
      if (count === 1) response.writeHead(503, { 'retry-after': '2' }).end();
      else if (count === 2) response.writeHead(429, { 'retry-after': new Date(Date.now() + 2000).toUTCString() }).end();
      else response.writeHead(200).end('ok');
    };
    const { tenant, path } = await hook(target.url());
    const ping = await sendTestPing(stack, tenant, path);
    const delivery = await settled(tenant, path, ping.eventId);
    expect(delivery.status).toBe('Succeeded');
    expect(delivery.attempts.map((a) => a.statusCode)).toEqual([503, 429, 200]);
    const [first, second] = gaps(delivery);
    expect(first).toBeGreaterThanOrEqual(2000);
    // An HTTP date has whole seconds: at least one second after the answer.
    expect(second).toBeGreaterThanOrEqual(1000);
    expect(second).toBeLessThan(SCHEDULE[1]! + 4000);
  });

  it('gives up an attempt at the timeout, and a 3xx is a failure whose Location is never followed', async () => {
    const hanging = await receiver();
    hanging.hang();
    const { tenant, path } = await hook(hanging.url());
    const ping = await sendTestPing(stack, tenant, path);
    const delivery = await eventually(
      async () => (await deliveries(tenant, path)).find((d) => d.eventId === ping.eventId)!,
      (d) => d.attempts.length > 0,
      'the first attempt',
    );
    expect(delivery.attempts[0]).toMatchObject({ statusCode: null, error: expect.stringMatching(/^timeout/) });
    expect(delivery.attempts[0]!.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(delivery.attempts[0]!.durationMs).toBeLessThan(TIMEOUT_MS + 1000);

    const elsewhere = await receiver();
    const redirecting = await receiver();
    redirecting.behave = (_request, response) => response.writeHead(302, { location: elsewhere.url('/stolen') }).end();
    const second = await hook(redirecting.url());
    const redirected = await sendTestPing(stack, second.tenant, second.path);
    const failed = await settled(second.tenant, second.path, redirected.eventId);
    expect(failed.status).toBe('Failed');
    expect(failed.attempts.map((a) => a.statusCode)).toEqual(Array(SCHEDULE.length + 1).fill(302));
    expect(elsewhere.received).toEqual([]);
  });

  it('redelivers a delivery on request, with the same webhook-id and a longer log', async () => {
    const target = await receiver();
    const { tenant, path } = await hook(target.url());
    const ping = await sendTestPing(stack, tenant, path);
    await settled(tenant, path, ping.eventId);
    const again = await stack.request('POST', `${path}/deliveries/${ping.id}/redeliver`, { token: tenant.token });
    expect(again.status, again.text).toBe(202);
    const requests = await eventually(() => target.byId(ping.eventId), (r) => r.length === 2, 'the redelivery');
    expect(requests[1]!.body).toBe(requests[0]!.body);
    const delivery = await eventually(
      async () => (await deliveries(tenant, path)).find((d) => d.id === ping.id)!,
      (d) => d.status === 'Succeeded' && d.attempts.length === 2,
      'the redelivery logged',
    );
    expect(delivery.attempts.map((a) => a.statusCode)).toEqual([204, 204]);
  });

  it('disables a webhook whose every attempt failed for WEBHOOK_DISABLE_AFTER_MS, with a webhook.disabled event, and enabling brings deliveries back', async () => {
    const target = await receiver();
    target.behave = (_request, response) => response.writeHead(500).end();
    const { tenant, webhook, path } = await hook(target.url());
    const started = Date.now();
    let lastPing = '';
    await eventually(
      async () => {
        lastPing = (await sendTestPing(stack, tenant, path)).id;
        return (await stack.request('GET', path, { token: tenant.token })).body as WebhookResource;
      },
      (w) => w.status === 'Disabled',
      'the webhook disabled',
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(DISABLE_AFTER_MS);
    const disabled = (await stack.request('GET', path, { token: tenant.token })).body as WebhookResource;
    expect(disabled.disabledReason).toMatch(/failed since .* disabled after 3 s of failures/);
    // Nothing it had when disabled is left Pending (later test pings are deliveries a user asked for). Every
    // ping but the last was stored before a read that still saw the webhook Active, so before the disable
    // (which takes the deliveries' insert lock); the last may have waited for that lock and come after it.
    // (Its created_at cannot tell: the OMS stamps it before taking the lock.)
    const leftovers = await oms.query(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'Pending' AND id <> $2",
      [webhook.id, lastPing],
    );
    expect(leftovers.rows[0].n).toBe(0);
    // The event reaches the feed, without the secret.
    const feed = await eventually(
      async () => (await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/events?type=webhook.disabled`, { token: tenant.token })).body.items as { data: Record<string, unknown> }[],
      (items) => items.length === 1,
      'the webhook.disabled event in the feed',
    );
    expect(feed[0]!.data).toEqual({ ...disabled });
    expect(feed[0]!.data).not.toHaveProperty('secret');
    // Events no longer create deliveries for it. A second webhook of the account witnesses the event's
    // dispatch, which serves every webhook of the account in one transaction: the enable below comes after it.
    const witness = await receiver();
    await createWebhook(stack, tenant, { body: { url: witness.url(), eventTypes: ['*'] } });
    const [ignored] = await writeEvents([{ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, type: EventType.ShipmentCreated, data: {} }]);
    await eventually(() => witness.byId(ignored!).length, (n) => n > 0, 'the event dispatched to the other webhook');
    // A test ping is still sent to a Disabled webhook (to try the endpoint before enabling it); it stays Disabled.
    target.behave = (_request, response) => response.writeHead(200).end();
    const ping = await sendTestPing(stack, tenant, path);
    expect((await settled(tenant, path, ping.eventId)).status).toBe('Succeeded');
    expect(((await stack.request('GET', path, { token: tenant.token })).body as WebhookResource).status).toBe('Disabled');
    // Enable: the next event is delivered, the streak starts over.
    expect((await stack.request('POST', `${path}/enable`, { token: tenant.token })).status).toBe(204);
    const [after] = await writeEvents([{ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, type: EventType.ShipmentCreated, data: {} }]);
    expect((await settled(tenant, path, after!)).status).toBe('Succeeded');
    expect(target.byId(ignored!)).toEqual([]);
    expect((await deliveries(tenant, path)).find((d) => d.eventId === ignored)).toBeUndefined();
    const row = await oms.query('SELECT status, failing_since FROM webhooks WHERE id = $1', [webhook.id]);
    expect(row.rows[0]).toEqual({ status: 'Active', failing_since: null });
  });

  it('a receiver that never answers does not delay other webhooks beyond their own timeouts', async () => {
    const dead = await receiver();
    dead.hang();
    const slow = await hook(dead.url());
    // Far more than the per-webhook cap (4) and the process's slots (16).
    await oms.query(
      `INSERT INTO webhook_deliveries (id, tenant_id, account_id, webhook_id, event_id, event_type, payload, status, next_attempt_at, created_at, updated_at)
       SELECT gen_random_uuid(), $1, $2, $3, gen_random_uuid(), 'webhook.test', '{}', 'Pending', now(), now(), now() FROM generate_series(1, 100)`,
      [slow.tenant.tenantId, slow.tenant.accountIds[0], slow.webhook.id],
    );
    await eventually(() => dead.received.length, (n) => n >= 4, 'the dead receiver holding its slots');
    const alive = await receiver();
    const healthy = await Promise.all([hook(alive.url('/a')), hook(alive.url('/b'))]);
    const pinged = Date.now();
    const pings = await Promise.all(healthy.map(({ tenant, path }) => sendTestPing(stack, tenant, path)));
    await eventually(() => pings.every((p) => alive.byId(p.eventId).length === 1), Boolean, 'the healthy deliveries');
    expect(Date.now() - pinged).toBeLessThan(TIMEOUT_MS);
    // The dead one never had more than its cap in flight at once: every request it got came in groups of at most 4 per timeout.
    const early = dead.received.filter((r) => r.at < dead.received[0]!.at + TIMEOUT_MS / 2);
    expect(early.length).toBeLessThanOrEqual(4);
  });

  it('two senders never send one attempt twice', async () => {
    const second = await stack.startWorker();
    try {
      const target = await receiver();
      const { tenant, webhook } = await hook(target.url());
      const count = 300;
      await oms.query(
        `INSERT INTO webhook_deliveries (id, tenant_id, account_id, webhook_id, event_id, event_type, payload, status, next_attempt_at, created_at, updated_at)
         SELECT gen_random_uuid(), $1, $2, $3, gen_random_uuid(), 'webhook.test', '{}', 'Pending', now(), now(), now() FROM generate_series(1, $4::int)`,
        [tenant.tenantId, tenant.accountIds[0], webhook.id, count],
      );
      await eventually(
        async () => (await oms.query("SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'Succeeded'", [webhook.id])).rows[0].n,
        (n) => n === count,
        'every delivery sent',
      );
      const ids = target.received.map((r) => r.headers['webhook-id']);
      expect(ids).toHaveLength(count);
      expect(new Set(ids).size).toBe(count);
      const logs = await oms.query('SELECT jsonb_array_length(attempts) AS n FROM webhook_deliveries WHERE webhook_id = $1', [webhook.id]);
      expect(logs.rows.every((r) => r.n === 1)).toBe(true);
    } finally {
      await second.close();
      stack.workers.splice(stack.workers.indexOf(second), 1);
    }
  });

  it("a sender killed in the middle of a lease: another sends the delivery once the lease lapses", async () => {
    await stack.stopWorkers();
    try {
      const target = await receiver();
      target.hang();
      const { tenant, path } = await hook(target.url());
      const doomed = await spawnService(stack, 'worker', { WEBHOOK_TIMEOUT_MS: '3000', WEBHOOK_LEASE_MS: '4000' });
      const ping = await sendTestPing(stack, tenant, path);
      await eventually(() => target.byId(ping.eventId), (r) => r.length === 1, 'the doomed attempt');
      await doomed.kill9();
      const killedAt = Date.now();
      target.behave = (_request, response) => response.writeHead(200).end();
      await stack.startWorker();
      const delivery = await settled(tenant, path, ping.eventId);
      expect(delivery.status).toBe('Succeeded');
      const requests = target.byId(ping.eventId);
      // The killed sender's attempt shows, its outcome unknown, from when it was claimed; then the survivor's.
      expect(delivery.attempts.map((a) => a.statusCode)).toEqual([null, 200]);
      expect(delivery.attempts[0]!.error).toMatch(/^unknown: /);
      expect(Date.parse(delivery.attempts[0]!.at)).toBeLessThanOrEqual(requests[0]!.at);
      expect(Date.parse(delivery.attempts[0]!.at)).toBeGreaterThan(requests[0]!.at - 2000);
      expect(delivery.attempts[0]!.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(delivery.attemptsTotal).toBe(2);
      expect(requests).toHaveLength(2);
      expect(requests[1]!.at - killedAt).toBeLessThan(4000 + 2000);
      expect(requests[1]!.body).toBe(requests[0]!.body);
    } finally {
      if (stack.workers.length === 0) await stack.startWorker();
    }
  });
});
