import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '@tracking/sdk';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDevices, startBulkRetire, waitForOperation } from '../factories/bulk.factory.js';
import { createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { createWebhook, sendTestPing } from '../factories/webhook.factory.js';
import { eventually } from '../support/eventually.js';
import { TestStack } from '../support/stack.js';

/*
 * Every event type that today's routes produce, made through the API and received by a real local
 * receiver as a signed Standard Webhooks request: verified with the `standardwebhooks` package and with
 * the SDK's `verifyWebhook`, body equal to the event in the feed (same id). `webhook.disabled` has its
 * own test in webhook-delivery.spec.ts (it needs days of failures, shortened there).
 */

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

const EXPECTED = [
  'shipment.created',
  'shipment.updated',
  'shipment.started',
  'shipment.delivered',
  'shipment.completed',
  'shipment.cancelled',
  'shipment.deleted',
  'device.created',
  'device.updated',
  'device.retired',
  'device.deleted',
  'device.assigned',
  'device.unassigned',
  'operation.finished',
  'webhook.test',
];

describe('webhooks: a signed delivery of every event type the routes produce', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let server: Server;
  const received: Received[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({ headers: request.headers, body: Buffer.concat(chunks).toString() });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    stack = await TestStack.start({ workers: 1, env: { WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    tenant = await createTenant(stack);
  });

  afterAll(async () => {
    await stack?.stop();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('delivers each one signed, with the body of the feed event of the same id', async () => {
    const account = `/v1/accounts/${tenant.accountIds[0]}`;
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    const { webhook, path } = await createWebhook(stack, tenant, { body: { url, eventTypes: ['*'] } });
    const call = async (method: string, route: string, body?: unknown) => {
      const response = await stack.request(method, account + route, { token: tenant.token, ...(body === undefined ? {} : { body }) });
      expect(response.status, `${method} ${route}: ${response.text}`).toBeLessThan(300);
      return response;
    };

    // Shipments: created, updated, started, delivered, completed (releasing its device), cancelled, deleted.
    const shipment = await createShipment(stack, tenant);
    await call('PATCH', `/shipments/${shipment.id}`, { carrier: 'Event Express' });
    const set = (await createSet(stack, tenant, shipment.id)).set;
    const device = (await createDevice(stack, tenant)).device;
    await call('PATCH', `/devices/${device.id}`, { model: 'Renamed model' });
    await call('PUT', `/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`);
    await call('POST', `/shipments/${shipment.id}/start`);
    await call('POST', `/shipments/${shipment.id}/deliver`);
    await call('POST', `/shipments/${shipment.id}/complete`);
    const cancelled = await createShipment(stack, tenant);
    await call('POST', `/shipments/${cancelled.id}/cancel`);
    const deleted = await createShipment(stack, tenant);
    await call('DELETE', `/shipments/${deleted.id}`);
    // Devices: retired, deleted; a bulk operation's end.
    await call('POST', `/devices/${(await createDevice(stack, tenant)).device.id}/retire`);
    await call('DELETE', `/devices/${(await createDevice(stack, tenant)).device.id}`);
    await waitForOperation(stack, tenant, await startBulkRetire(stack, tenant, await seedDevices(stack, tenant, 2)));
    await sendTestPing(stack, tenant, path);

    const typesOf = () => new Set(received.map((request) => (JSON.parse(request.body) as { type: string }).type));
    const deadline = Date.now() + 30000;
    while (!EXPECTED.every((type) => typesOf().has(type)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect([...typesOf()].sort()).toEqual([...EXPECTED].sort());

    const verifier = new Webhook(webhook.secret);
    // The feed has its own consumer of the stream, which a delivery says nothing about: wait until it holds
    // every delivered event (a test ping is the webhook's own, not the account's).
    const delivered = received.map((request) => JSON.parse(request.body) as { id: string; type: string }).filter((event) => event.type !== 'webhook.test');
    const feed = await eventually(
      () => stack.request('GET', `${account}/events?limit=100`, { token: tenant.token }),
      (response) => response.status !== 200 || delivered.every((event) => (response.body.items as { id: string }[]).some((item) => item.id === event.id)),
      'every delivered event in the feed',
    );
    expect(feed.status, feed.text).toBe(200);
    const feedById = new Map((feed.body.items as { id: string }[]).map((event) => [event.id, event]));
    for (const request of received) {
      const headers = { 'webhook-id': String(request.headers['webhook-id']), 'webhook-timestamp': String(request.headers['webhook-timestamp']), 'webhook-signature': String(request.headers['webhook-signature']) };
      const event = JSON.parse(request.body) as { id: string; type: string; accountId: string };
      expect(() => verifier.verify(request.body, headers), event.type).not.toThrow();
      expect(verifyWebhook(webhook.secret, request.headers as Record<string, string>, request.body)).toEqual(event);
      expect(headers['webhook-id']).toBe(event.id);
      expect(event.accountId).toBe(tenant.accountIds[0]);
      // The same event, with the same id, is in the feed (a test ping is the webhook's own, not the account's).
      if (event.type !== 'webhook.test') expect(feedById.get(event.id)).toEqual(event);
      // A tampered body fails verification.
      expect(() => verifyWebhook(webhook.secret, request.headers as Record<string, string>, request.body.replace('"', ' "'))).toThrow();
    }
  });
});
