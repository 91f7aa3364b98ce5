import { randomUUID } from 'node:crypto';
import { type Alert, AlertKind, type TrackingEvent } from '@tracking/contracts';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inEvaluation, openAlert, withOutcomes } from '../factories/alert.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createDevice } from '../factories/device.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment, createShipmentIn } from '../factories/shipment.factory.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS, UUID_V7 } from '../support/http-assertions.js';
import { connectOms } from '../support/oms-database.js';
import { describePaging } from '../support/paging-behaviour.js';
import { TestStack } from '../support/stack.js';
import { eventually } from '../support/eventually.js';

/*
 * Alerts: what clients read and acknowledge (GET /alerts, GET /alerts/{id}, POST /alerts/{id}/acknowledge),
 * and the store the evaluation of readings writes them with (`EvaluationStore`), which these tests call
 * as the evaluation does (`inEvaluation`: a chunk of one shipment): the one open alert per (shipment,
 * device, kind) under concurrent opens on two replicas, replays, peaks, closes and their events, and
 * closing shipments closing their alerts.
 */

const T0 = Date.UTC(2026, 2, 1, 8, 0, 0);
const at = (seconds: number) => new Date(T0 + seconds * 1000);

describe('alerts', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let oms: pg.Client;
  let base: string;

  beforeAll(async () => {
    // The paging tests open more than the default hourly allowance of alerts (20) on one shipment; the allowance has its own tests (webhook-amplification.spec.ts).
    stack = await TestStack.start({ omsReplicas: 2, env: { ALERTS_PER_SHIPMENT_PER_HOUR: '1000' } });
    tenant = await createTenant(stack, { accounts: 2 });
    oms = await connectOms(stack);
    base = `/v1/accounts/${tenant.accountIds[0]}`;
  });

  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
  });

  const get = (path: string, token = tenant.token) => stack.request('GET', `${base}${path}`, { token });
  const post = (path: string, token = tenant.token) => stack.request('POST', `${base}${path}`, { token });

  /** Every event of the account's feed of these types, oldest first. */
  async function feed(types: string, account = 0): Promise<TrackingEvent<Alert>[]> {
    const events: TrackingEvent<Alert>[] = [];
    let cursor: string | null = null;
    do {
      const suffix: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const page = await stack.request('GET', `/v1/accounts/${tenant.accountIds[account]}/events?type=${types}&limit=100${suffix}`, { token: tenant.token });
      expect(page.status, page.text).toBe(200);
      events.push(...page.body.items);
      cursor = page.body.metadata.nextCursor;
    } while (cursor);
    return events;
  }

  /** The feed's events of `types` about the alert `id`, once an event `markerId` written after them has arrived. */
  async function eventsOf(id: string, types: string, marker: () => Promise<string>): Promise<TrackingEvent<Alert>[]> {
    const markerId = await marker();
    const events = await eventually(() => feed(types), (found) => found.some((event) => event.data.id === markerId), 'the marker event');
    return events.filter((event) => event.data.id === id);
  }

  /** An alert opened and closed on a new shipment: its `alert.closed` comes after everything written before. */
  async function closedMarker(): Promise<string> {
    const shipment = await createShipment(stack, tenant);
    const alert = await openAlert(stack, tenant, shipment.id);
    await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.closeAlert({ deviceId: alert.deviceId, kind: alert.kind, endedAt: new Date(Date.parse(alert.startedAt) + 1000) }));
    return alert.id;
  }

  describe('GET /alerts/{id} and the fields of an alert', () => {
    it('shows exactly the fields of the API, as the store opened it', async () => {
      const shipment = await createShipment(stack, tenant);
      const deviceId = randomUUID();
      const alert = await openAlert(stack, tenant, shipment.id, { deviceId, kind: AlertKind.TemperatureLow, startedAt: at(10), threshold: 2, peakValue: 1.5 });
      const response = await get(`/alerts/${alert.id}`);
      expect(response.status).toBe(200);
      expect(Object.keys(response.body)).toEqual([
        'id', 'shipmentId', 'deviceId', 'kind', 'status', 'startedAt', 'endedAt', 'threshold', 'peakValue', 'acknowledgedAt', 'createdAt', 'updatedAt',
      ]);
      expect(response.body).toEqual({
        id: expect.stringMatching(UUID_V7),
        shipmentId: shipment.id,
        deviceId,
        kind: 'TemperatureLow',
        status: 'Open',
        startedAt: at(10).toISOString(),
        endedAt: null,
        threshold: 2,
        peakValue: 1.5,
        acknowledgedAt: null,
        createdAt: expect.stringMatching(TIMESTAMP_MS),
        updatedAt: expect.stringMatching(TIMESTAMP_MS),
      });
      expect(response.body).toEqual(alert);
    });

    it('is 404 AlertNotExists for an unknown id, a malformed id and the alert of another account', async () => {
      expectError(await get(`/alerts/${randomUUID()}`), 404, 'AlertNotExists');
      expectError(await get('/alerts/not-a-uuid'), 404, 'AlertNotExists');
      const theirs = await createShipment(stack, tenant, { account: 1 });
      const foreign = await openAlert(stack, tenant, theirs.id, { account: 1 });
      expectError(await get(`/alerts/${foreign.id}`), 404, 'AlertNotExists');
      expectError(await post(`/alerts/${foreign.id}/acknowledge`), 404, 'AlertNotExists');
      expect((await stack.request('GET', `/v1/accounts/${tenant.accountIds[1]}/alerts/${foreign.id}`, { token: tenant.token })).status).toBe(200);
      // Nor does the other account's list show it.
      const mine = await get(`/alerts?shipmentId=${theirs.id}`);
      expect(mine.body.items).toEqual([]);
      // Unchanged by the refused acknowledge.
      expect((await stack.request('GET', `/v1/accounts/${tenant.accountIds[1]}/alerts/${foreign.id}`, { token: tenant.token })).body.acknowledgedAt).toBeNull();
    });
  });

  describe('GET /alerts', () => {
    let shipmentA: string;
    let shipmentB: string;
    let device: string;
    let alerts: Alert[];

    beforeAll(async () => {
      shipmentA = (await createShipment(stack, tenant)).id;
      shipmentB = (await createShipment(stack, tenant)).id;
      device = randomUUID();
      alerts = [
        await openAlert(stack, tenant, shipmentA, { deviceId: device, kind: AlertKind.TemperatureHigh }),
        await openAlert(stack, tenant, shipmentA, { deviceId: device, kind: AlertKind.HumidityLow, threshold: 20 }),
        await openAlert(stack, tenant, shipmentA, { deviceId: null, kind: AlertKind.SignalLoss, threshold: 600, peakValue: null }),
        await openAlert(stack, tenant, shipmentB, { kind: AlertKind.Shock, threshold: 4 }),
      ];
      await withOutcomes(stack, tenant, shipmentA, (outcomes) => outcomes.closeAlert({ deviceId: device, kind: AlertKind.HumidityLow, endedAt: new Date() }));
    });

    const ids = async (query: string) => {
      const response = await get(`/alerts?limit=100&${query}`);
      expect(response.status, response.text).toBe(200);
      return response.body.items.map((alert: Alert) => alert.id);
    };

    it('filters by shipmentId, deviceId, status and kind (one or a comma list), combined with AND, in creation order', async () => {
      const [high, humidity, silence, shock] = alerts.map((alert) => alert.id);
      expect(await ids(`shipmentId=${shipmentA}`)).toEqual([high, humidity, silence]);
      expect(await ids(`shipmentId=${shipmentA.toUpperCase()}`)).toEqual([high, humidity, silence]);
      expect(await ids(`deviceId=${device}`)).toEqual([high, humidity]);
      expect(await ids(`shipmentId=${shipmentA}&status=Open`)).toEqual([high, silence]);
      expect(await ids(`shipmentId=${shipmentA}&status=Closed`)).toEqual([humidity]);
      expect(await ids(`shipmentId=${shipmentA}&status=Open,Closed`)).toEqual([high, humidity, silence]);
      expect(await ids(`shipmentId=${shipmentB}&kind=Shock`)).toEqual([shock]);
      expect(await ids(`kind=SignalLoss,HumidityLow&shipmentId=${shipmentA}`)).toEqual([humidity, silence]);
      expect(await ids(`shipmentId=${shipmentB}&kind=TemperatureHigh`)).toEqual([]);
      expect(await ids(`deviceId=${randomUUID()}`)).toEqual([]);
      const closed = (await get(`/alerts/${humidity}`)).body;
      expect(closed).toMatchObject({ status: 'Closed', endedAt: expect.stringMatching(TIMESTAMP_MS) });
    });

    it('refuses malformed filters and a cursor of other filters', async () => {
      expectInvalidParameter(await get('/alerts?status=Pending'), 'status', 'InvalidFormat');
      expectInvalidParameter(await get('/alerts?kind=Fire'), 'kind', 'InvalidFormat');
      expectInvalidParameter(await get('/alerts?shipmentId=abc'), 'shipmentId', 'InvalidFormat');
      expectInvalidParameter(await get('/alerts?deviceId=123'), 'deviceId', 'InvalidFormat');
      expectInvalidParameter(await get('/alerts?severity=high'), 'severity', 'UnknownField');
      expectInvalidParameter(await get('/alerts?status=Open&status=Closed'), 'status', 'InvalidFormat');
      const first = await get(`/alerts?shipmentId=${shipmentA}&limit=1`);
      const cursor = encodeURIComponent(first.body.metadata.nextCursor);
      expectInvalidParameter(await get(`/alerts?shipmentId=${shipmentB}&limit=1&cursor=${cursor}`), 'cursor', 'InvalidCursor');
      expectInvalidParameter(await get(`/alerts?limit=1&cursor=${cursor}`), 'cursor', 'InvalidCursor');
      expect((await get(`/alerts?shipmentId=${shipmentA}&limit=1&cursor=${cursor}`)).status).toBe(200);
    });

    it('lets a Viewer read alerts but not acknowledge them', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      const shipment = (await createShipment(stack, { ...viewer, token: (await createTenantToken(viewer)) })).id;
      const alert = await openAlert(stack, viewer, shipment);
      const path = `/v1/accounts/${viewer.accountIds[0]}/alerts`;
      expect((await stack.request('GET', path, { token: viewer.token })).body.items.map((item: Alert) => item.id)).toEqual([alert.id]);
      expect((await stack.request('GET', `${path}/${alert.id}`, { token: viewer.token })).status).toBe(200);
      expectError(await stack.request('POST', `${path}/${alert.id}/acknowledge`, { token: viewer.token }), 403, 'Forbidden');
      expect((await stack.request('GET', `${path}/${alert.id}`, { token: viewer.token })).body.acknowledgedAt).toBeNull();
    });
  });

  /** A token of an Admin application on the same tenant, to create what a Viewer then reads. */
  async function createTenantToken(viewer: TestTenant): Promise<string> {
    const admin = await stack.identity.createApplication(viewer.tenantId, 'Admin of the viewer tenant', 'Admin', '*');
    const response = await stack.request('POST', '/v1/applications/token', {
      body: { tenantId: viewer.tenantId, applicationId: admin.applicationId, applicationSecret: admin.applicationSecret },
    });
    return response.body.accessToken as string;
  }

  const pagingContext = new Map<string, { tenant: TestTenant; shipmentId: string }>();
  describePaging('GET /alerts', 'severity', () => ({
    newCollection: async () => {
      const paged = await createTenant(stack);
      const shipment = await createShipment(stack, paged);
      pagingContext.set(`/v1/accounts/${paged.accountIds[0]}/alerts`, { tenant: paged, shipmentId: shipment.id });
      return `/v1/accounts/${paged.accountIds[0]}/alerts`;
    },
    create: async (path) => {
      const { tenant: paged, shipmentId } = pagingContext.get(path)!;
      return openAlert(stack, paged, shipmentId);
    },
    list: (path, query = '') => stack.request('GET', `${path}${query}`, { token: pagingContext.get(path)!.tenant.token }),
  }));

  describe('POST /alerts/{id}/acknowledge', () => {
    it('answers 204, again 204 keeping the first acknowledgedAt, and emits alert.acknowledged once', async () => {
      const shipment = await createShipment(stack, tenant);
      const alert = await openAlert(stack, tenant, shipment.id);
      const first = await post(`/alerts/${alert.id}/acknowledge`);
      expect(first.status, first.text).toBe(204);
      expect(first.text).toBe('');
      const acknowledged = (await get(`/alerts/${alert.id}`)).body;
      expect(acknowledged.acknowledgedAt).toMatch(TIMESTAMP_MS);
      expect(acknowledged.updatedAt).toBe(acknowledged.acknowledgedAt);
      expect(acknowledged.status).toBe('Open');
      expect((await post(`/alerts/${alert.id.toUpperCase()}/acknowledge`)).status).toBe(204);
      expect((await get(`/alerts/${alert.id}`)).body).toEqual(acknowledged);

      const events = await eventsOf(alert.id, 'alert.acknowledged,alert.closed', closedMarker);
      expect(events.map((event) => event.type)).toEqual(['alert.acknowledged']);
      expect(events[0]!.data).toEqual(acknowledged);
    });

    it('acknowledges a closed alert, and the concurrent acknowledges of one alert set it once with one event', async () => {
      const shipment = await createShipment(stack, tenant);
      const alert = await openAlert(stack, tenant, shipment.id);
      await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.closeAlert({ deviceId: alert.deviceId, kind: alert.kind, endedAt: at(3600) }));
      const answers = await Promise.all(Array.from({ length: 8 }, () => post(`/alerts/${alert.id}/acknowledge`)));
      expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(204));
      const closed = (await get(`/alerts/${alert.id}`)).body;
      expect(closed).toMatchObject({ status: 'Closed', endedAt: at(3600).toISOString(), acknowledgedAt: expect.stringMatching(TIMESTAMP_MS) });
      const events = await eventsOf(alert.id, 'alert.acknowledged', async () => {
        const markerShipment = await createShipment(stack, tenant);
        const marker = await openAlert(stack, tenant, markerShipment.id);
        expect((await post(`/alerts/${marker.id}/acknowledge`)).status).toBe(204);
        return marker.id;
      });
      expect(events).toHaveLength(1);
    });

    it('is 404 AlertNotExists for an unknown or malformed id', async () => {
      expectError(await post(`/alerts/${randomUUID()}/acknowledge`), 404, 'AlertNotExists');
      expectError(await post('/alerts/nope/acknowledge'), 404, 'AlertNotExists');
    });
  });

  describe('the evaluation store', () => {
    it('opens one alert per (shipment, device, kind): concurrent opens on two replicas open exactly one, with one event', async () => {
      const shipment = await createShipment(stack, tenant);
      const deviceId = randomUUID();
      const attempts = Array.from({ length: 12 }, (_, n) =>
        withOutcomes(
          stack,
          tenant,
          shipment.id,
          (outcomes) => outcomes.openAlert({ deviceId, kind: AlertKind.TemperatureHigh, startedAt: at(n), threshold: 8, peakValue: 9 + n }),
          { replica: n % 2 },
        ),
      );
      // Shipment-wide alerts have no device: one open SignalLoss all the same.
      const silences = Array.from({ length: 6 }, (_, n) =>
        withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.openAlert({ deviceId: null, kind: AlertKind.SignalLoss, startedAt: at(n), threshold: 600 }), {
          replica: n % 2,
        }),
      );
      const results = await Promise.all(attempts);
      const silenceResults = await Promise.all(silences);
      for (const outcome of [results, silenceResults]) {
        expect(outcome.filter((result) => result.opened)).toHaveLength(1);
        expect(new Set(outcome.map((result) => result.alert!.id)).size).toBe(1);
      }
      const { rows } = await oms.query(`SELECT kind, count(*)::int AS n FROM alerts WHERE shipment_id = $1 GROUP BY kind ORDER BY kind`, [shipment.id]);
      expect(rows).toEqual([
        { kind: 'SignalLoss', n: 1 },
        { kind: 'TemperatureHigh', n: 1 },
      ]);
      const opened = results.find((result) => result.opened)!.alert!;
      const events = await eventsOf(opened.id, 'alert.opened', closedMarker);
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toEqual(opened);
      // The database refuses a second open alert whoever writes it.
      await expect(
        oms.query(
          `INSERT INTO alerts (id, tenant_id, account_id, shipment_id, device_id, kind, status, started_at, threshold, created_at, updated_at)
           VALUES ($1, $2, $3, $4, NULL, 'SignalLoss', 'Open', now(), 1, now(), now())`,
          [randomUUID(), tenant.tenantId, tenant.accountIds[0], shipment.id],
        ),
      ).rejects.toThrow(/alerts_one_open_idx/);
    });

    it('finds a replayed opening (same startedAt) after the alert closed, and opens a new excursion after it', async () => {
      const shipment = await createShipment(stack, tenant);
      const deviceId = randomUUID();
      const opening = { deviceId, kind: AlertKind.HumidityHigh, startedAt: at(100), threshold: 70, peakValue: 75 };
      const first = await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.openAlert(opening));
      const closed = await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.closeAlert({ deviceId, kind: AlertKind.HumidityHigh, endedAt: at(200) }));
      expect(closed).toMatchObject({ id: first.alert!.id, status: 'Closed', endedAt: at(200).toISOString() });
      const replay = await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.openAlert(opening));
      expect(replay).toEqual({ opened: false, alert: closed });
      // Closing again closes nothing and emits nothing.
      expect(await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.closeAlert({ deviceId, kind: AlertKind.HumidityHigh, endedAt: at(250) }))).toBeNull();
      const next = await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.openAlert({ ...opening, startedAt: at(300) }));
      expect(next.opened).toBe(true);
      expect(next.alert!.id).not.toBe(first.alert!.id);
      const events = await eventsOf(first.alert!.id, 'alert.opened,alert.closed', closedMarker);
      expect(events.map((event) => event.type)).toEqual(['alert.opened', 'alert.closed']);
      expect(events[1]!.data).toEqual(closed);
    });

    it('moves peakValue only towards the worse value: up for high kinds, down for low ones', async () => {
      const shipment = await createShipment(stack, tenant);
      const deviceId = randomUUID();
      await openAlert(stack, tenant, shipment.id, { deviceId, kind: AlertKind.TemperatureHigh, threshold: 8, peakValue: 9 });
      await openAlert(stack, tenant, shipment.id, { deviceId, kind: AlertKind.BatteryLow, threshold: 15, peakValue: 12 });
      const peak = (kind: AlertKind, value: number) => withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.raisePeak({ deviceId, kind }, value));
      expect(await peak(AlertKind.TemperatureHigh, 11)).toMatchObject({ peakValue: 11 });
      expect(await peak(AlertKind.TemperatureHigh, 10)).toBeNull();
      expect(await peak(AlertKind.BatteryLow, 14)).toBeNull();
      expect(await peak(AlertKind.BatteryLow, 7)).toMatchObject({ peakValue: 7 });
      expect(await peak(AlertKind.Shock, 50)).toBeNull();
      const listed = (await get(`/alerts?shipmentId=${shipment.id}`)).body.items as Alert[];
      expect(listed.map((alert) => [alert.kind, alert.peakValue])).toEqual([
        ['TemperatureHigh', 11],
        ['BatteryLow', 7],
      ]);
    });

    it("closes a released device's open alerts, or all of a shipment's, each with its event; a close never ends before the start", async () => {
      const shipment = await createShipment(stack, tenant);
      const [one, two] = [randomUUID(), randomUUID()];
      const a = await openAlert(stack, tenant, shipment.id, { deviceId: one, kind: AlertKind.TemperatureHigh, startedAt: at(10) });
      const b = await openAlert(stack, tenant, shipment.id, { deviceId: one, kind: AlertKind.Light, startedAt: at(20) });
      const c = await openAlert(stack, tenant, shipment.id, { deviceId: two, kind: AlertKind.TemperatureHigh, startedAt: at(30) });
      const d = await openAlert(stack, tenant, shipment.id, { deviceId: null, kind: AlertKind.SignalLoss, startedAt: at(40) });
      const released = await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.closeOpenAlerts({ deviceId: one, endedAt: at(25) }));
      expect(released.map((alert) => [alert.id, alert.endedAt])).toEqual([
        [a.id, at(25).toISOString()],
        [b.id, at(25).toISOString()],
      ]);
      const shipmentWide = await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.closeOpenAlerts({ deviceId: null, endedAt: at(35) }));
      // An alert that started after the end given ends when it started.
      expect(shipmentWide.map((alert) => [alert.id, alert.endedAt])).toEqual([[d.id, at(40).toISOString()]]);
      const rest = await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.closeOpenAlerts({ endedAt: at(50) }));
      expect(rest.map((alert) => alert.id)).toEqual([c.id]);
      expect(await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.closeOpenAlerts({ endedAt: at(60) }))).toEqual([]);
      const events = await eventually(
        async () => (await feed('alert.closed')).filter((event) => event.data.shipmentId === shipment.id),
        (found) => found.length >= 4,
        'the four alert.closed events',
      );
      expect(events.map((event) => event.data.id).sort()).toEqual([a.id, b.id, c.id, d.id].sort());
    });

    it('writes nothing of a transaction that fails: no alert, no event', async () => {
      const shipment = await createShipment(stack, tenant);
      const deviceId = randomUUID();
      await expect(
        withOutcomes(stack, tenant, shipment.id, async (outcomes) => {
          await outcomes.openAlert({ deviceId, kind: AlertKind.Shock, startedAt: at(1), threshold: 4, peakValue: 6 });
          throw new Error('the evaluation failed after deciding');
        }),
      ).rejects.toThrow('the evaluation failed after deciding');
      expect((await oms.query('SELECT count(*)::int AS n FROM alerts WHERE shipment_id = $1', [shipment.id])).rows[0].n).toBe(0);
      expect((await get(`/alerts?shipmentId=${shipment.id}`)).body.items).toEqual([]);
    });

    it('refuses an unknown shipment, another account\'s, and a closed one: nothing runs', async () => {
      let ran = false;
      const work = async () => {
        ran = true;
      };
      const scope = (shipmentId: string, account = 0) => ({ tenantId: tenant.tenantId, accountId: tenant.accountIds[account]!, shipmentId });
      expect(await inEvaluation(stack, scope(randomUUID()), work)).toBeNull();
      expect(await inEvaluation(stack, scope('not-a-uuid'), work)).toBeNull();
      const theirs = await createShipment(stack, tenant, { account: 1 });
      expect(await inEvaluation(stack, scope(theirs.id), work)).toBeNull();
      const completed = await createShipmentIn(stack, tenant, 'Completed');
      const cancelled = await createShipmentIn(stack, tenant, 'Cancelled');
      expect(await inEvaluation(stack, scope(completed.id), work)).toBeNull();
      expect(await inEvaluation(stack, scope(cancelled.id), work)).toBeNull();
      expect(ran).toBe(false);
      const delivered = await createShipmentIn(stack, tenant, 'Delivered');
      expect(await inEvaluation(stack, scope(delivered.id), work)).toEqual({ status: 'Delivered', result: undefined });
      expect(ran).toBe(true);
    });
  });

  describe('a closing shipment closes its open alerts', () => {
    it.each([
      ['complete', 'Delivered', 'completedAt'],
      ['cancel', 'InTransit', 'cancelledAt'],
    ] as const)('%s: endedAt is the moment it closed, with alert.closed for each, in the same transaction', async (action, from, stamp) => {
      const shipment = await createShipmentIn(stack, tenant, from);
      const deviceId = randomUUID();
      const high = await openAlert(stack, tenant, shipment.id, { deviceId, kind: AlertKind.TemperatureHigh, startedAt: at(5) });
      const silence = await openAlert(stack, tenant, shipment.id, { deviceId: null, kind: AlertKind.SignalLoss, startedAt: at(6) });
      const earlier = await openAlert(stack, tenant, shipment.id, { deviceId, kind: AlertKind.Shock, startedAt: at(1) });
      await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.closeAlert({ deviceId, kind: AlertKind.Shock, endedAt: at(2) }));
      expect((await post(`/shipments/${shipment.id}/${action}`)).status).toBe(204);
      const closedAt = (await get(`/shipments/${shipment.id}`)).body[stamp] as string;
      const alerts = (await get(`/alerts?shipmentId=${shipment.id}`)).body.items as Alert[];
      expect(alerts.map((alert) => [alert.id, alert.status, alert.endedAt])).toEqual([
        [high.id, 'Closed', closedAt],
        [silence.id, 'Closed', closedAt],
        [earlier.id, 'Closed', at(2).toISOString()],
      ]);
      const events = await eventually(
        async () => (await feed('alert.closed')).filter((event) => event.data.shipmentId === shipment.id),
        (found) => found.length >= 3,
        'the alert.closed events',
      );
      expect(events.map((event) => event.data.id).sort()).toEqual([high.id, silence.id, earlier.id].sort());
      expect(events.find((event) => event.data.id === high.id)!.data).toEqual(alerts[0]);
    });

    it("unassigning a device closes that device's open alerts on the shipment, and only those", async () => {
      const shipment = await createShipmentIn(stack, tenant, 'InTransit');
      const { set } = await createSet(stack, tenant, shipment.id);
      const { device } = await createDevice(stack, tenant);
      const link = `${base}/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`;
      expect((await stack.request('PUT', link, { token: tenant.token })).status).toBe(204);
      const mine = await openAlert(stack, tenant, shipment.id, { deviceId: device.id, kind: AlertKind.TemperatureHigh });
      const other = await openAlert(stack, tenant, shipment.id, { deviceId: randomUUID(), kind: AlertKind.TemperatureHigh });
      const silence = await openAlert(stack, tenant, shipment.id, { deviceId: null, kind: AlertKind.SignalLoss });
      const before = Date.now();
      expect((await stack.request('DELETE', link, { token: tenant.token })).status).toBe(204);
      const closed = (await get(`/alerts/${mine.id}`)).body as Alert;
      expect(closed.status).toBe('Closed');
      expect(Date.parse(closed.endedAt!)).toBeGreaterThanOrEqual(before - 1000);
      expect((await get(`/alerts/${other.id}`)).body.status).toBe('Open');
      expect((await get(`/alerts/${silence.id}`)).body.status).toBe('Open');
      const events = await eventsOf(mine.id, 'alert.closed', closedMarker);
      expect(events.map((event) => event.data)).toEqual([closed]);
    });

    it('delete: the alerts stay, closed, after the shipment is gone', async () => {
      const shipment = await createShipment(stack, tenant);
      const alert = await openAlert(stack, tenant, shipment.id);
      expect((await stack.request('DELETE', `${base}/shipments/${shipment.id}`, { token: tenant.token })).status).toBe(204);
      const kept = (await get(`/alerts/${alert.id}`)).body;
      expect(kept).toMatchObject({ id: alert.id, shipmentId: shipment.id, status: 'Closed', endedAt: expect.stringMatching(TIMESTAMP_MS) });
      expect(Date.parse(kept.endedAt)).toBeGreaterThanOrEqual(Date.parse(alert.createdAt));
    });

    it('a close rolled back (the DMS refuses to release) leaves the alerts open', async () => {
      const shipment = await createShipmentIn(stack, tenant, 'InTransit');
      const alert = await openAlert(stack, tenant, shipment.id);
      try {
        await stack.stopDmsReplicas();
        const refused = await post(`/shipments/${shipment.id}/cancel`);
        expect(refused.status).toBe(503);
      } finally {
        await stack.startDmsReplica();
      }
      expect((await get(`/alerts/${alert.id}`)).body).toMatchObject({ status: 'Open', endedAt: null });
      expect((await post(`/shipments/${shipment.id}/cancel`)).status).toBe(204);
      expect((await get(`/alerts/${alert.id}`)).body.status).toBe('Closed');
    });

    it('an alert opened while the shipment closes is closed with it: the close waits for the evaluation, then sees its alert', async () => {
      const shipment = await createShipmentIn(stack, tenant, 'InTransit');
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let opened!: () => void;
      const hasOpened = new Promise<void>((resolve) => (opened = resolve));
      const evaluation = withOutcomes(stack, tenant, shipment.id, async (outcomes) => {
        const result = await outcomes.openAlert({ deviceId: null, kind: AlertKind.SignalLoss, startedAt: at(0), threshold: 600 });
        opened();
        await held;
        return result;
      });
      await hasOpened;
      const cancel = post(`/shipments/${shipment.id}/cancel`);
      // The cancel waits for the evaluation's lock on the shipment.
      await eventually(
        async () =>
          (
            await oms.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
            )
          ).rows[0].n as number,
        (n) => n > 0,
        'the cancel to wait for the lock',
      );
      release();
      const { alert } = await evaluation;
      expect((await cancel).status).toBe(204);
      expect((await get(`/alerts/${alert!.id}`)).body).toMatchObject({ status: 'Closed', endedAt: (await get(`/shipments/${shipment.id}`)).body.cancelledAt });
    });
  });
});
