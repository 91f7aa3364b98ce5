import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventType } from '@tracking/contracts';
import { recordEvents } from '@tracking/outbox';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../factories/identity.factory.js';
import { createWebhook } from '../factories/webhook.factory.js';
import { eventually } from '../support/eventually.js';
import { connectOms } from '../support/oms-database.js';
import { TestStack } from '../support/stack.js';

/*
 * The delivery engine's own wake-ups, with the poll far away (60 s): a webhook with more deliveries due
 * than its share (WEBHOOK_CONCURRENCY_PER_WEBHOOK x the waiting rounds of docs/webhook-delivery.md) gets
 * the rest as its attempts end, not at the next poll. webhook-delivery.spec polls every 50 ms, which
 * would hide a missing wake-up.
 */
describe('webhook delivery without the poll', { timeout: 60000 }, () => {
  let stack: TestStack;
  let oms: pg.Client;
  let server: Server;
  const received: string[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      received.push(String(request.headers['webhook-id']));
      request.resume();
      request.on('end', () => setTimeout(() => response.writeHead(204).end(), 5));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    stack = await TestStack.start({
      workers: 1,
      env: {
        WEBHOOK_ALLOW_INSECURE: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '60000',
        // A share of 2 x (1 + 4 waiting rounds) = 10 held deliveries per webhook (10 s timeout, 60 s lease).
        WEBHOOK_CONCURRENCY_PER_WEBHOOK: '2',
        OUTBOX_POLL_INTERVAL_MS: '100',
      },
    });
    oms = await connectOms(stack);
  }, 120000);

  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('sends a webhook’s deliveries beyond its share as its attempts end, long before the next poll', async () => {
    const tenant = await createTenant(stack);
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    await createWebhook(stack, tenant, { body: { url, eventTypes: ['*'] } });
    const records = Array.from({ length: 60 }, (_, index) => ({
      tenantId: tenant.tenantId,
      accountId: tenant.accountIds[0]!,
      type: EventType.ShipmentCreated,
      data: { index },
    }));
    await oms.query('BEGIN');
    const events = await recordEvents(oms, records);
    await oms.query('COMMIT');
    const ids = new Set(events.map((event) => event.id));
    // Six times its share; the poll would come only after 60 s, past this deadline.
    const got = await eventually(() => Promise.resolve(received.filter((id) => ids.has(id))), (mine) => mine.length >= ids.size, 'every delivery', 20000);
    expect(new Set(got).size).toBe(ids.size);
  });
});
