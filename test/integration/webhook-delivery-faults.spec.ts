import type { Delivery } from '@tracking/contracts';
import { ServiceMetrics } from '@tracking/observability';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createWebhook, sendTestPing } from '../factories/webhook.factory.js';
import { eventually as eventuallyWithin } from '../support/eventually.js';
import { connectOms } from '../support/oms-database.js';
import { TestStack } from '../support/stack.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

/*
 * Webhook delivery (docs/webhook-delivery.md) under hostile receivers and faults: answers the
 * database cannot store as they are, outcomes it refuses, large bodies, long attempt logs, killed senders.
 */

const TIMEOUT_MS = 1500;
const LEASE_MS = 8000;
const DEADLINE_MS = 20000;

function eventually<T>(read: () => Promise<T> | T, done: (value: T) => boolean, what: string, deadlineMs = DEADLINE_MS): Promise<T> {
  return eventuallyWithin(read, done, what, deadlineMs);
}

describe('webhook delivery faults', { timeout: 90000 }, () => {
  let stack: TestStack;
  let oms: pg.Client;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    stack = await TestStack.start({
      workers: 1,
      env: {
        WEBHOOK_ALLOW_INSECURE: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
        WEBHOOK_LEASE_MS: String(LEASE_MS),
        WEBHOOK_RETRY_SCHEDULE: '200ms,300ms,400ms',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        WEBHOOK_CONCURRENCY: '16',
        WEBHOOK_CONCURRENCY_PER_WEBHOOK: '4',
        OUTBOX_POLL_INTERVAL_MS: '100',
        WEBHOOK_DELIVERIES_RETENTION_INTERVAL_MS: '200',
      },
    });
    oms = await connectOms(stack);
  }, 120000);

  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await oms?.end();
    await stack?.stop();
  });

  async function receiver(): Promise<WebhookReceiver> {
    const created = await WebhookReceiver.start();
    receivers.push(created);
    return created;
  }

  async function hook(url: string): Promise<{ tenant: TestTenant; webhookId: string; path: string }> {
    const tenant = await createTenant(stack);
    const { webhook, path } = await createWebhook(stack, tenant, { body: { url, eventTypes: ['*'] } });
    return { tenant, webhookId: webhook.id, path };
  }

  async function deliveries(tenant: TestTenant, path: string): Promise<Delivery[]> {
    const page = await stack.request('GET', `${path}/deliveries?limit=100`, { token: tenant.token });
    expect(page.status, page.text).toBe(200);
    return page.body.items as Delivery[];
  }

  async function delivery(tenant: TestTenant, path: string, id: string): Promise<Delivery | undefined> {
    return (await deliveries(tenant, path)).find((d) => d.id === id);
  }

  async function quarantined(action: string): Promise<number> {
    const metric = stack.workers[0]!.get(ServiceMetrics).registry.getSingleMetric('webhook_delivery_outcomes_quarantined_total');
    const values = (await metric!.get()).values;
    return values.find((v) => v.labels.action === action)?.value ?? 0;
  }

  it("a receiver answering with NUL bytes holds up no other tenant's delivery, and its answer is stored with U+FFFD", async () => {
    const poison = await receiver();
    // U+0000 and the UTF-8 bytes of a lone surrogate (ED A0 80), which PostgreSQL's jsonb refuses as they are.
    poison.behave = (_request, response) => response.writeHead(500).end(Buffer.concat([Buffer.from('bad\u0000body '), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(' end')]));
    const bad = await hook(poison.url());
    const badPing = await sendTestPing(stack, bad.tenant, bad.path);
    await eventually(() => poison.byId(badPing.eventId), (r) => r.length >= 1, 'the NUL answer');

    const healthy = await receiver();
    const good = await hook(healthy.url());
    const pinged = Date.now();
    const goodPing = await sendTestPing(stack, good.tenant, good.path);
    const settled = await eventually(() => delivery(good.tenant, good.path, goodPing.id), (d) => d?.status !== 'Pending', "the other tenant's delivery settling");
    const pendingMs = Date.now() - pinged;
    console.info(`another tenant's delivery stayed Pending for ${pendingMs} ms beside a receiver answering NUL bytes`);
    expect(settled).toMatchObject({ status: 'Succeeded', attempts: [{ statusCode: 204, error: null }] });
    expect(pendingMs).toBeLessThan(3000);
    expect(healthy.byId(goodPing.eventId)).toHaveLength(1);

    const logged = await eventually(() => delivery(bad.tenant, bad.path, badPing.id), (d) => (d?.attempts.length ?? 0) > 0, 'the NUL answer logged');
    expect(logged!.attempts[0]!.statusCode).toBe(500);
    expect(logged!.attempts[0]!.error).toMatch(/^HTTP 500: bad\uFFFDbody \uFFFD+ end$/);
  });

  it('an outcome the database refuses is quarantined and counted, and every other outcome is recorded', async () => {
    const refusing = await receiver();
    refusing.behave = (_request, response) => response.writeHead(500).end('refuse-me');
    const dropping = await receiver();
    dropping.behave = (_request, response) => response.writeHead(500).end('drop-me');
    const [refused, dropped] = [await hook(refusing.url()), await hook(dropping.url())];
    // Fault injection in the real database: a trigger refuses (SQLSTATE 22P05, as for U+0000) any recorded
    // outcome holding 'refuse-me', and every recorded outcome of the second webhook.
    await oms.query(`CREATE FUNCTION test_refuse_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'refused by the test' USING ERRCODE = '22P05'; END $$`);
    await oms.query(
      `CREATE TRIGGER test_refuse_outcome BEFORE UPDATE ON webhook_deliveries FOR EACH ROW
       WHEN (NEW.lease_until IS NULL AND jsonb_array_length(NEW.attempts) > jsonb_array_length(OLD.attempts)
         AND (NEW.attempts::text LIKE '%refuse-me%' OR NEW.webhook_id = '${dropped.webhookId}'))
       EXECUTE FUNCTION test_refuse_outcome()`,
    );
    try {
      const before = { stored: await quarantined('stored_without_detail'), dropped: await quarantined('dropped') };
      const refusedPing = await sendTestPing(stack, refused.tenant, refused.path);
      const droppedPing = await sendTestPing(stack, dropped.tenant, dropped.path);
      await eventually(() => dropping.byId(droppedPing.eventId), (r) => r.length >= 1, 'the dropped attempt');

      const healthy = await receiver();
      const good = await hook(healthy.url());
      const pinged = Date.now();
      const goodPing = await sendTestPing(stack, good.tenant, good.path);
      const settled = await eventually(() => delivery(good.tenant, good.path, goodPing.id), (d) => d?.status !== 'Pending', "the other tenant's delivery settling");
      expect(settled!.status).toBe('Succeeded');
      expect(Date.now() - pinged).toBeLessThan(3000);

      // Refused with its text, stored without it: the attempt and the retry schedule still count.
      const bare = await eventually(() => delivery(refused.tenant, refused.path, refusedPing.id), (d) => (d?.attempts.length ?? 0) > 0, 'the refused outcome stored without detail');
      expect(bare!.attempts[0]).toMatchObject({ statusCode: 500, error: 'the outcome could not be stored (SQLSTATE 22P05)' });
      // Refused in every form: dropped, the delivery left to its lease.
      await eventually(() => quarantined('dropped'), (n) => n > before.dropped, 'the dropped outcome counted');
      expect(await quarantined('stored_without_detail')).toBeGreaterThan(before.stored);
      const stuck = await oms.query('SELECT status, jsonb_array_length(attempts) AS n FROM webhook_deliveries WHERE id = $1', [droppedPing.id]);
      expect(stuck.rows[0]).toMatchObject({ status: 'Pending' });
    } finally {
      await oms.query('DROP TRIGGER test_refuse_outcome ON webhook_deliveries');
      await oms.query('DROP FUNCTION test_refuse_outcome()');
    }
  });

  it('a 2xx with a body of any size is a success; only a bounded prefix of a failure body is kept', async () => {
    const target = await receiver();
    const sizes: Record<string, number> = { '/64k': 64 * 1024, '/1m': 1024 * 1024, '/small': 10 };
    target.behave = (request, response) => {
      const status = request.path.startsWith('/fail') ? 500 : 200;
      response.writeHead(status).end('y'.repeat(sizes[request.path.replace('/fail', '/')] ?? sizes[request.path] ?? 2 * 1024 * 1024));
    };
    const hooks = await Promise.all(['/64k', '/1m', '/small', '/fail'].map((path) => hook(target.url(path))));
    const pings = await Promise.all(hooks.map(({ tenant, path }) => sendTestPing(stack, tenant, path)));
    const settled = await Promise.all(
      hooks.map(({ tenant, path }, i) => eventually(() => delivery(tenant, path, pings[i]!.id), (d) => d?.status !== 'Pending', `delivery ${i} settling`)),
    );
    for (const done of settled.slice(0, 3)) expect(done).toMatchObject({ status: 'Succeeded', attempts: [{ statusCode: 200, error: null }] });
    for (const ping of pings.slice(0, 3)) expect(target.byId(ping.eventId)).toHaveLength(1);
    // 2 MiB of 500: failed after every attempt, each logging 1 KiB of the body at most.
    expect(settled[3]!.status).toBe('Failed');
    for (const attempt of settled[3]!.attempts) {
      expect(attempt.statusCode).toBe(500);
      expect(Buffer.byteLength(attempt.error!)).toBeLessThanOrEqual(1024);
    }
  });

  /** Inserts `count` deliveries of the webhook straight into the table, settled or not, with `attempts`. */
  async function seedDeliveries(
    target: { tenant: TestTenant; webhookId: string },
    count: number,
    fields: { status: string; attemptsSql: string; nextAttemptAt?: string; updatedAt?: string },
  ): Promise<string[]> {
    const rows = await oms.query(
      `INSERT INTO webhook_deliveries (id, tenant_id, account_id, webhook_id, event_id, event_type, payload, status, attempts, attempt_count, next_attempt_at, created_at, updated_at)
       SELECT gen_random_uuid(), $1, $2, $3, gen_random_uuid(), 'webhook.test', '{}', $4, ${fields.attemptsSql}, 0, ${fields.nextAttemptAt ?? 'NULL'}, now(), ${fields.updatedAt ?? 'now()'}
       FROM generate_series(1, $5::int) ORDER BY 1 RETURNING id`,
      [target.tenant.tenantId, target.tenant.accountIds[0], target.webhookId, fields.status, count],
    );
    return rows.rows.map((r: { id: string }) => r.id);
  }

  it('a delivery keeps its last 20 attempts and counts them all, however often it is redelivered', async () => {
    const target = await receiver();
    const { tenant, webhookId, path } = await hook(target.url());
    const ping = await sendTestPing(stack, tenant, path);
    await eventually(() => delivery(tenant, path, ping.id), (d) => d?.status === 'Succeeded', 'the ping');
    // The red team's delivery: 405 attempts of 1 KiB of error each, from redelivering over and over.
    await oms.query(
      `UPDATE webhook_deliveries SET attempts = (SELECT jsonb_agg(jsonb_build_object('at', now(), 'statusCode', 500, 'durationMs', 1, 'error', 'HTTP 500: ' || repeat('x', 1000))) FROM generate_series(1, 405))
       WHERE id = $1`,
      [ping.id],
    );
    await oms.query('UPDATE webhook_deliveries SET attempts_total = 405 WHERE id = $1', [ping.id]);
    expect((await stack.request('POST', `${path}/deliveries/${ping.id}/redeliver`, { token: tenant.token })).status).toBe(202);
    const again = await eventually(() => delivery(tenant, path, ping.id), (d) => d?.attemptsTotal === 406, 'the redelivery logged');
    expect(again!.status).toBe('Succeeded');
    expect(again!.attempts).toHaveLength(20);
    expect(again!.attempts.at(-1)).toMatchObject({ statusCode: 204, error: null });
    expect(again!.attempts.slice(0, 19).every((a) => a.statusCode === 500)).toBe(true);
    const stored = await oms.query('SELECT jsonb_array_length(attempts) AS n, attempts_total FROM webhook_deliveries WHERE webhook_id = $1', [webhookId]);
    expect(stored.rows).toEqual([{ n: 20, attempts_total: 406 }]);
  });

  it('a delivery list page fits a NATS message however long its deliveries\' logs are, and paging still returns each once', async () => {
    const target = await receiver();
    const owner = await hook(target.url());
    // 20 attempts of 1000 control characters each: some 120 KB of JSON per delivery once escaped.
    const ids = await seedDeliveries(owner, 40, {
      status: 'Failed',
      attemptsSql: `(SELECT jsonb_agg(jsonb_build_object('at', now(), 'statusCode', 500, 'durationMs', 1, 'error', repeat(chr(1), 1000))) FROM generate_series(1, 20))`,
    });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
      const page = await stack.request('GET', `${owner.path}/deliveries?limit=100${query}`, { token: owner.tenant.token });
      expect(page.status, page.text.slice(0, 300)).toBe(200);
      expect(Buffer.byteLength(page.text)).toBeLessThan(1024 * 1024);
      const items = page.body.items as Delivery[];
      expect(items.length).toBeGreaterThan(0);
      seen.push(...items.map((d) => d.id));
      cursor = page.body.metadata.nextCursor as string | null;
      pages++;
    } while (cursor !== null && pages < 100);
    expect(seen).toEqual(ids);
    expect(pages).toBeGreaterThan(1);
  });

  it('deletes settled deliveries past WEBHOOK_DELIVERIES_RETENTION_DAYS, never a Pending one nor a recent one', async () => {
    const target = await receiver();
    const owner = await hook(target.url());
    const attemptsSql = `'[]'::jsonb`;
    const old = `now() - interval '31 days'`;
    const expired = [
      ...(await seedDeliveries(owner, 3, { status: 'Succeeded', attemptsSql, updatedAt: old })),
      ...(await seedDeliveries(owner, 2, { status: 'Failed', attemptsSql, updatedAt: old })),
    ];
    const kept = [
      ...(await seedDeliveries(owner, 2, { status: 'Succeeded', attemptsSql, updatedAt: `now() - interval '29 days'` })),
      // Pending and due in an hour (not sent meanwhile), last changed long ago.
      ...(await seedDeliveries(owner, 1, { status: 'Pending', attemptsSql, updatedAt: old, nextAttemptAt: `now() + interval '1 hour'` })),
    ];
    await eventually(
      async () => (await oms.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE id = ANY ($1::uuid[])', [expired])).rows[0].n,
      (n) => n === 0,
      'the expired deliveries deleted',
    );
    const left = await oms.query('SELECT id FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY seq', [owner.webhookId]);
    expect(left.rows.map((r: { id: string }) => r.id)).toEqual(kept);
  });
});
