import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { TrackingClient } from '@tracking/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simulate } from '../../apps/simulator/src/simulation.js';
import { MAX_TEMPERATURE_C, TRIPS } from '../../apps/simulator/src/trips.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { eventually } from '../support/eventually.js';
import { TestStack } from '../support/stack.js';

const run = promisify(execFile);

/**
 * `npm run simulate` (apps/simulator) against a stack, eight times faster than real time: within the
 * run, a newcomer's "done" list must hold: a track per shipment, a departure and an arrival (visits,
 * automatic transitions), a cold-chain alert that opens and closes, and signed webhook deliveries of
 * all of it.
 */
describe('the simulator', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start({
      workers: 1,
      env: {
        // As npm start's short bound: a decision waits at most this long for a silent tracker.
        EVALUATION_LATENESS_SECONDS: '5',
        // npm start allows webhooks to this machine over http://; the receiver is the simulator's own.
        WEBHOOK_ALLOW_INSECURE: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        OUTBOX_POLL_INTERVAL_MS: '100',
      },
    });
    tenant = await createTenant(stack);
  }, 120000);
  afterAll(() => stack?.stop());

  it('drives the trips: tracks grow, departures and arrivals are recorded, an alert opens and closes, and every event arrives signed', async () => {
    const client = new TrackingClient({
      baseUrl: stack.baseUrl,
      tenantId: tenant.tenantId,
      applicationId: tenant.applicationId,
      applicationSecret: tenant.applicationSecret,
    });
    const lines: string[] = [];
    const report = await simulate({ account: client.account(tenant.accountIds[0]!), timeScale: 8, settleTimeoutMs: 20000, log: (line) => lines.push(line) });
    const output = lines.join('\n');

    expect(report.trips.map((trip) => trip.name)).toEqual(TRIPS.map((trip) => trip.name));
    for (const trip of report.trips) {
      // Every reading on the track: recorded after the assignment, none lost.
      expect(trip.readingsSent, output).toBeGreaterThan(60);
      expect(trip.trackPoints, output).toBe(trip.readingsSent);
      // Arrived at the origin, departed from it (which started the shipment), arrived at the destination (which delivered it).
      expect(trip.visits.map((visit) => [visit.poiId, visit.departedAt !== null]), output).toEqual([
        [trip.originId, true],
        [trip.destinationId, false],
      ]);
      expect(trip.status, output).toBe('Delivered');
    }
    const [coldChain, dry] = report.trips;
    expect(coldChain!.alerts, output).toHaveLength(1);
    expect(coldChain!.alerts[0], output).toMatchObject({ kind: 'TemperatureHigh', status: 'Closed', threshold: MAX_TEMPERATURE_C });
    expect(coldChain!.alerts[0]!.peakValue).toBeGreaterThan(MAX_TEMPERATURE_C);
    expect(dry!.alerts, output).toEqual([]);

    // Signed deliveries, each verified by the receiver with the webhook's secret, of what a newcomer wants to see.
    expect(report.deliveries.length, output).toBeGreaterThan(0);
    expect(report.deliveries.every((delivery) => delivery.verified), output).toBe(true);
    const seen = (shipmentId: string) =>
      report.deliveries.filter((delivery) => delivery.event?.data.shipmentId === shipmentId || delivery.event?.data.id === shipmentId).map((delivery) => delivery.type);
    for (const trip of report.trips) {
      expect(seen(trip.shipmentId), output).toEqual(expect.arrayContaining(['shipment.arrived', 'shipment.departed', 'shipment.started', 'shipment.delivered']));
    }
    expect(seen(coldChain!.shipmentId), output).toEqual(expect.arrayContaining(['alert.opened', 'alert.closed']));
    // The same events as the account's feed: the deliveries are the system's events, not made up.
    const deliveredIds = report.deliveries.map((delivery) => delivery.id);
    const feedIds = await eventually(
      async () => {
        const feed = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/events?limit=100`, { token: tenant.token });
        expect(feed.status, feed.text).toBe(200);
        return new Set((feed.body.items as { id: string }[]).map((event) => event.id));
      },
      (ids) => deliveredIds.every((id) => ids.has(id)),
      'every delivered event in the feed',
    );
    expect(deliveredIds.filter((id) => !feedIds.has(id))).toEqual([]);
    // Its webhook is gone with its receiver.
    const webhook = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/webhooks/${report.webhookId}`, { token: tenant.token });
    expect(webhook.status).toBe(404);
    expect(output).toMatch(/alert\.opened TemperatureHigh "Rotterdam/);
  }, 60000);

  it('refuses a time scale that is not above 0, before it creates anything', async () => {
    const client = new TrackingClient({ baseUrl: stack.baseUrl, tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: tenant.applicationSecret });
    await expect(simulate({ account: client.account(tenant.accountIds[0]!), timeScale: 0, log: () => undefined })).rejects.toThrow(/timeScale/);
  });

  it('npm run simulate says what is missing: no credentials from npm start, a bad time scale', async () => {
    const missing = await run(process.execPath, ['apps/simulator/dist/main.js', '--credentials', '/nonexistent/demo-credentials.json']).catch((error: { code: number; stderr: string }) => error);
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining('run npm start first') });
    const scale = await run(process.execPath, ['apps/simulator/dist/main.js', '--time-scale', 'fast']).catch((error: { code: number; stderr: string }) => error);
    expect(scale).toMatchObject({ code: 1, stderr: expect.stringContaining('--time-scale must be a number above 0') });
  });
});
