import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Delivery, EventType, type TrackingEvent } from '@tracking/contracts';
import { type EventRecord, recordEvents } from '@tracking/outbox';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOmsConfig } from '../../apps/oms/src/config.js';
import { DeliveryRepository } from '../../apps/oms/src/webhooks/delivery/delivery.repository.js';
import { assignDevice, createDevice } from '../factories/device.factory.js';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { createWebhook } from '../factories/webhook.factory.js';
import { eventually } from '../support/eventually.js';
import { connectOms } from '../support/oms-database.js';
import { TestStack } from '../support/stack.js';

/*
 * The bounds on webhook amplification (docs/webhook-delivery.md, "Amplification bounds"; docs/alerts-and-visits.md,
 * "Alerts per shipment and hour"): one delivery per event and URL of an account however many webhooks
 * name it, the account's hourly delivery budget, and the shipment's hourly allowance of alerts with its one
 * `alert.suppressed`. Everything runs through the real path: readings posted by an Ingest token, the
 * evaluation, the outbox, JetStream, the dispatch consumer and the sender, to a local receiver.
 */

const LATENESS_SECONDS = 30;
const BUDGET = 60;
const ALERTS_PER_HOUR = 20;
const DEADLINE_MS = 60000;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A local receiver answering 204, keeping every request. */
class Receiver {
  readonly received: Received[] = [];
  private readonly server: Server;

  private constructor() {
    this.server = createServer((request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        this.received.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString() });
        response.writeHead(204).end();
      });
    });
  }

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  byId(id: string): Received[] {
    return this.received.filter((r) => r.headers['webhook-id'] === id);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/**
 * The bounds count per clock hour: a scenario that started in the last `seconds` of an hour would be
 * split over two windows, so it starts after the turn of the hour instead.
 */
async function withinOneHour(seconds = 90): Promise<void> {
  const left = 3_600_000 - (Date.now() % 3_600_000);
  if (left < seconds * 1000) await new Promise((resolve) => setTimeout(resolve, left + 1000));
}

describe('webhook amplification bounds', { timeout: 180000 }, () => {
  let stack: TestStack;
  let oms: pg.Client;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    stack = await TestStack.start({
      workers: 1,
      env: {
        WEBHOOK_ALLOW_INSECURE: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR: String(BUDGET),
        ALERTS_PER_SHIPMENT_PER_HOUR: String(ALERTS_PER_HOUR),
        OUTBOX_POLL_INTERVAL_MS: '100',
        EVALUATION_LATENESS_SECONDS: String(LATENESS_SECONDS),
        EVALUATION_DELAY_MS: '20',
        EVALUATION_SWEEP_INTERVAL_MS: '100',
      },
    });
    oms = await connectOms(stack);
  }, 120000);

  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await oms?.end();
    await stack?.stop();
  });

  async function receiver(): Promise<Receiver> {
    const created = await Receiver.start();
    receivers.push(created);
    return created;
  }

  async function writeEvents(records: EventRecord[]): Promise<string[]> {
    await oms.query('BEGIN');
    const events = await recordEvents(oms, records);
    await oms.query('COMMIT');
    return events.map((event) => event.id);
  }

  /** The account's deliveries by status (every webhook), straight from the table. */
  async function deliveryCounts(accountId: string): Promise<Record<string, number>> {
    const { rows } = await oms.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE account_id = $1 GROUP BY status ORDER BY status',
      [accountId],
    );
    return Object.fromEntries(rows.map((row) => [row.status, row.n]));
  }

  /** Waits until the account has no Pending delivery left and a last event, written now, has been delivered to `target`. */
  async function drained(tenant: TestTenant, target: Receiver, markerType = EventType.ShipmentUpdated): Promise<void> {
    const [marker] = await writeEvents([{ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, type: markerType, data: { marker: true } }]);
    await eventually(() => target.byId(marker!).length, (n) => n > 0, 'the marker event', DEADLINE_MS);
    await eventually(() => deliveryCounts(tenant.accountIds[0]!), (counts) => (counts.Pending ?? 0) === 0, 'no delivery pending', DEADLINE_MS);
  }

  it('defaults to 10000 deliveries per account and hour, and 20 alerts per shipment and hour', () => {
    const config = readOmsConfig({});
    expect(config.WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR).toBe(10000);
    expect(config.ALERTS_PER_SHIPMENT_PER_HOUR).toBe(20);
    expect(() => readOmsConfig({ WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR: '0' })).toThrow(/WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR/);
    expect(() => readOmsConfig({ ALERTS_PER_SHIPMENT_PER_HOUR: 'x' })).toThrow(/ALERTS_PER_SHIPMENT_PER_HOUR/);
  });

  it('sends an event to a URL once per account, however many webhooks name it', async () => {
    await withinOneHour();
    const target = await receiver();
    const tenant = await createTenant(stack);
    const same: string[] = [];
    // The same URL five times, once with the host and scheme in capitals and a fragment (never sent): one target.
    for (let i = 0; i < 4; i++) same.push((await createWebhook(stack, tenant, { body: { url: target.url('/same?token=a') } })).path);
    same.push((await createWebhook(stack, tenant, { body: { url: target.url('/same?token=a').replace('http://127.0.0.1', 'HTTP://127.0.0.1') + '#frag' } })).path);
    // Another path and another query are other URLs.
    await createWebhook(stack, tenant, { body: { url: target.url('/other') } });
    await createWebhook(stack, tenant, { body: { url: target.url('/same?token=b') } });
    const [eventId] = await writeEvents([{ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, type: EventType.ShipmentCreated, data: {} }]);
    await drained(tenant, target);
    expect(target.byId(eventId!).map((r) => r.path).sort()).toEqual(['/other', '/same?token=a', '/same?token=b']);
    // The oldest webhook naming the URL has the delivery in its log; the others have none.
    const logs = await Promise.all(
      same.map(async (path) => ((await stack.request('GET', `${path}/deliveries`, { token: tenant.token })).body.items as Delivery[]).filter((d) => d.eventId === eventId)),
    );
    expect(logs.map((log) => log.length)).toEqual([1, 0, 0, 0, 0]);
    expect(logs[0]![0]!.status).toBe('Succeeded');
    // The stream bringing the event again (a redelivered batch) reaches no other webhook of that URL.
    const { rows } = await oms.query<{ payload: string }>('SELECT payload FROM webhook_deliveries WHERE event_id = $1 LIMIT 1', [eventId]);
    const dataSource = new DataSource({ type: 'postgres', url: stack.env.OMS_DATABASE_URL, poolSize: 1 });
    await dataSource.initialize();
    try {
      const again = await new DeliveryRepository(dataSource).dispatch([{ tenantId: tenant.tenantId, event: JSON.parse(rows[0]!.payload) as TrackingEvent }]);
      expect(again).toEqual({ created: 0, unsent: 0 });
    } finally {
      await dataSource.destroy();
    }
    const { rows: all } = await oms.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = $1', [eventId]);
    expect(all[0]!.n).toBe(3);
  });

  it("records deliveries beyond the account's hourly budget Failed and unsent, and redeliver sends one", async () => {
    await withinOneHour();
    const target = await receiver();
    const tenant = await createTenant(stack);
    const paths: string[] = [];
    for (const name of ['a', 'b', 'c']) paths.push((await createWebhook(stack, tenant, { body: { url: target.url(`/${name}`) } })).path);
    // 25 events x 3 URLs = 75 deliveries asked for, BUDGET (60) of them sent.
    const records = Array.from({ length: 25 }, (_, i) => ({ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, type: EventType.ShipmentUpdated, data: { i } }));
    const ids = [...(await writeEvents(records.slice(0, 10))), ...(await writeEvents(records.slice(10)))];
    await eventually(() => deliveryCounts(tenant.accountIds[0]!), (c) => (c.Pending ?? 0) === 0 && (c.Succeeded ?? 0) + (c.Failed ?? 0) === 75, 'every delivery settled', DEADLINE_MS);
    expect(await deliveryCounts(tenant.accountIds[0]!)).toEqual({ Failed: 15, Succeeded: BUDGET });
    expect(target.received.filter((r) => ids.includes(String(r.headers['webhook-id'])))).toHaveLength(BUDGET);
    // The unsent ones say why in their log, and were never attempted.
    const log = (await stack.request('GET', `${paths[2]}/deliveries?limit=100`, { token: tenant.token })).body.items as Delivery[];
    const unsent = log.filter((d) => d.status === 'Failed');
    expect(unsent.length).toBeGreaterThan(0);
    expect(unsent[0]).toMatchObject({
      status: 'Failed',
      nextAttemptAt: null,
      attempts: [{ at: expect.any(String), statusCode: null, durationMs: 0, error: expect.stringContaining(`for this hour (${BUDGET}) were used up`) }],
    });
    expect(target.byId(unsent[0]!.eventId)).toEqual([]);
    // Later events of the hour are not sent either.
    const [later] = await writeEvents([{ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, type: EventType.ShipmentUpdated, data: {} }]);
    await eventually(() => deliveryCounts(tenant.accountIds[0]!), (c) => c.Failed === 18, 'the later event recorded unsent', DEADLINE_MS);
    expect(target.byId(later!)).toEqual([]);
    // Redeliver (an Admin's or Operator's choice, one delivery at a time) sends it.
    const redeliver = await stack.request('POST', `${paths[2]}/deliveries/${unsent[0]!.id}/redeliver`, { token: tenant.token });
    expect(redeliver.status, redeliver.text).toBe(202);
    await eventually(() => target.byId(unsent[0]!.eventId).length, (n) => n === 1, 'the redelivered delivery', DEADLINE_MS);
  });

  it('200 alternating readings from an Ingest token to 20 webhooks on one URL: 20 alerts, one alert.suppressed, 41 requests', async () => {
    await withinOneHour(150);
    const target = await receiver();
    const tenant = await createTenant(stack);
    const accountId = tenant.accountIds[0]!;
    const ingest = await stack.identity.createApplication(tenant.tenantId, 'Device cloud', 'Ingest', '*');
    const ingestToken = await issueToken(stack, tenant.tenantId, ingest.applicationId, ingest.applicationSecret);
    const shipment = await createShipment(stack, tenant, { body: { conditions: { temperature: { minC: 2, maxC: 8 } } } });
    const { set } = await createSet(stack, tenant, shipment.id);
    const { device } = await createDevice(stack, tenant);
    const t0 = (await assignDevice(stack, tenant, set, device.id)) + 1000;
    const alertTypes = ['alert.opened', 'alert.closed', 'alert.suppressed'];
    for (let i = 0; i < 20; i++) await createWebhook(stack, tenant, { body: { url: target.url('/victim'), eventTypes: alertTypes } });
    // 0 and 12 degrees in turn, a second apart: each reading leaves one range and enters the other.
    const readings = Array.from({ length: 200 }, (_, i) => ({ deviceId: device.id, recordedAt: new Date(t0 + i * 1000).toISOString(), temperatureC: i % 2 === 0 ? 0 : 12 }));
    const flushAt = t0 + (199 + LATENESS_SECONDS + 5) * 1000;
    readings.push({ deviceId: device.id, recordedAt: new Date(flushAt).toISOString(), temperatureC: 5 });
    const response = await stack.request('POST', `/v1/accounts/${accountId}/readings`, { token: ingestToken, body: { readings } });
    expect(response.status, response.text).toBe(200);
    expect(response.body.rejected).toEqual([]);
    // The evaluation has taken in every reading (its watermark reached the flush)...
    await eventually(
      async () => Number((await oms.query("SELECT state->>'watermark' AS w FROM shipment_evaluations WHERE shipment_id = $1", [shipment.id])).rows[0]?.w ?? 0),
      (watermark) => watermark >= flushAt,
      'the evaluation of every reading',
      DEADLINE_MS,
    );
    // ... and every event it wrote was dispatched and sent (a marker of the same webhooks' types comes after them).
    await drained(tenant, target, EventType.AlertClosed);
    const { rows: alerts } = await oms.query<{ n: number }>('SELECT count(*)::int AS n FROM alerts WHERE shipment_id = $1', [shipment.id]);
    expect(alerts[0]!.n).toBe(ALERTS_PER_HOUR);
    const sent = target.received.filter((r) => (JSON.parse(r.body) as { data: { marker?: boolean } }).data.marker !== true);
    const types = sent.map((r) => (JSON.parse(r.body) as { type: string }).type);
    expect({ requests: sent.length, opened: types.filter((t) => t === 'alert.opened').length, suppressed: types.filter((t) => t === 'alert.suppressed').length }).toEqual({
      requests: 2 * ALERTS_PER_HOUR + 1,
      opened: ALERTS_PER_HOUR,
      suppressed: 1,
    });
    // The one alert.suppressed, in the feed as sent: the first alert not opened, and the end of the hour. The
    // feed has its own consumer of the stream, which the webhooks' marker says nothing about: wait for it.
    const feed = await eventually(
      () => stack.request('GET', `/v1/accounts/${accountId}/events?type=alert.suppressed`, { token: tenant.token }),
      (response) => response.status !== 200 || response.body.items.length > 0,
      'alert.suppressed in the feed',
      DEADLINE_MS,
    );
    expect(feed.status, feed.text).toBe(200);
    expect(feed.body.items).toHaveLength(1);
    const suppressed = feed.body.items[0].data as Record<string, unknown>;
    const hourEnd = (Math.floor(Date.parse(feed.body.items[0].occurredAt) / 3_600_000) + 1) * 3_600_000;
    // The 21st reading (0 degrees) left High and entered Low: TemperatureLow is the first alert not opened.
    expect(suppressed).toEqual({ shipmentId: shipment.id, deviceId: device.id, kind: 'TemperatureLow', until: new Date(hourEnd).toISOString() });
    expect(JSON.parse(sent.find((r) => (JSON.parse(r.body) as { type: string }).type === 'alert.suppressed')!.body).data).toEqual(suppressed);
  });
});
