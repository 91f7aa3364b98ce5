import { EventType } from '@tracking/contracts';
import { recordEvents } from '@tracking/outbox';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../factories/identity.factory.js';
import { createWebhook, sendTestPing } from '../factories/webhook.factory.js';
import { eventually } from '../support/eventually.js';
import { connectOms } from '../support/oms-database.js';
import { TestStack } from '../support/stack.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

/*
 * The sender's wake-ups (docs/webhook-delivery.md, "Waking the sender"), with the safety poll a minute
 * away: every delivery below must go out long before it. The other webhook specs poll every 50 ms,
 * which would hide a lost wake-up.
 */
const DEADLINE_MS = 20000;

describe('webhook delivery without the poll', { timeout: 90000 }, () => {
  let stack: TestStack;
  let oms: pg.Client;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    receiver.behave = (_request, response) => void setTimeout(() => response.writeHead(204).end(), 5);
    stack = await TestStack.start({
      workers: 1,
      env: {
        WEBHOOK_ALLOW_INSECURE: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '60000',
        WEBHOOK_CONCURRENCY_PER_WEBHOOK: '2',
        OUTBOX_POLL_INTERVAL_MS: '100',
      },
    });
    oms = await connectOms(stack);
  }, 120000);

  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
    await receiver?.close();
  });

  async function hook(path: string) {
    const tenant = await createTenant(stack);
    const { path: webhookPath } = await createWebhook(stack, tenant, { body: { url: receiver.url(path), eventTypes: ['*'] } });
    return { tenant, path: webhookPath };
  }

  it("sends a webhook's deliveries beyond its share as its attempts end", async () => {
    const { tenant } = await hook('/backlog');
    const records = Array.from({ length: 60 }, (_, index) => ({ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, type: EventType.ShipmentCreated, data: { index } }));
    await oms.query('BEGIN');
    const ids = new Set((await recordEvents(oms, records)).map((event) => event.id));
    await oms.query('COMMIT');
    // Thirty times its share of 2; before, a claim made while the webhook held its share lost the wake-up and the rest waited for the poll.
    const got = await eventually(() => receiver.received.filter((r) => ids.has(String(r.headers['webhook-id']))), (mine) => mine.length >= ids.size, 'every delivery', DEADLINE_MS);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(ids.size);
  });

  it('sends a delivery another process made due (a test ping from the OMS, a redeliver) at once', async () => {
    const { tenant, path } = await hook('/ping');
    const ping = await sendTestPing(stack, tenant, path);
    await eventually(() => receiver.byId(ping.eventId), (r) => r.length === 1, 'the test ping', DEADLINE_MS);
    await eventually(async () => (await oms.query('SELECT status FROM webhook_deliveries WHERE id = $1', [ping.id])).rows[0]?.status, (s) => s === 'Succeeded', 'the ping recorded', DEADLINE_MS);
    const again = await stack.request('POST', `${path}/deliveries/${ping.id}/redeliver`, { token: tenant.token });
    expect(again.status, again.text).toBe(202);
    await eventually(() => receiver.byId(ping.eventId), (r) => r.length === 2, 'the redelivery', DEADLINE_MS);
  });

  it('listens again after PostgreSQL dropped its connection, and sends what was made due meanwhile', async () => {
    const { tenant, path } = await hook('/reconnect');
    const database = new URL(stack.env.OMS_DATABASE_URL).pathname.slice(1);
    const listeners = `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'listen webhook_deliveries_due'`;
    const terminated = await oms.query(`SELECT pg_terminate_backend(pid) AS done FROM (${listeners}) l`, [database]);
    expect(terminated.rows).toHaveLength(1);
    const ping = await sendTestPing(stack, tenant, path);
    await eventually(() => receiver.byId(ping.eventId), (r) => r.length === 1, 'the ping after the reconnection', DEADLINE_MS);
    // Listening again: a later ping goes out at once too.
    await eventually(async () => (await oms.query(listeners, [database])).rowCount, (n) => n === 1, 'the listener back', DEADLINE_MS);
    const later = await sendTestPing(stack, tenant, path);
    await eventually(() => receiver.byId(later.eventId), (r) => r.length === 1, 'a later ping', DEADLINE_MS);
  });
});
