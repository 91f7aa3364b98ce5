import { randomUUID } from 'node:crypto';
import type { Device, Shipment } from '@tracking/contracts';
import { initialState } from '@tracking/geofence';
import { ServiceMetrics } from '@tracking/observability';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DUE_AT_SLACK_SECONDS, EvaluationRecordRepository } from '../../apps/oms/src/evaluation/evaluation-record.repository.js';
import { EvaluationConsumer } from '../../apps/oms/src/evaluation/evaluation.consumer.js';
import { PlaceCache } from '../../apps/oms/src/evaluation/place-cache.js';
import type { INestApplicationContext } from '@nestjs/common';
import type { GeofenceReading } from '@tracking/geofence';
import { assignDevice, createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { clockPast } from '../support/clock.js';
import { eventually } from '../support/eventually.js';
import { TestStack } from '../support/stack.js';

/** The bound of this stack: a device silent this long in server time no longer holds a shipment back. */
const LATENESS_SECONDS = 30;

const RADIUS = 100;
let places = 0;
/** A new spot for each place of the file (0.1 degree of longitude apart), so no test sees another's places. */
function spot(): { lat: number; lng: number } {
  return { lat: 51.9, lng: 4 + 0.1 * places++ };
}
/** A position `northMeters` north of `centre` (a degree of latitude is 111195 m on the sphere used). */
const at = (centre: { lat: number; lng: number }, northMeters: number, accuracyMeters: number | null = 5) => ({
  lat: centre.lat + northMeters / 111_195,
  lng: centre.lng,
  accuracyMeters,
});
type Position = ReturnType<typeof at>;

interface Reading {
  recordedAt: number;
  location?: Position | null;
  temperatureC?: number;
  humidityPercent?: number;
  shockG?: number;
  lightLux?: number;
  batteryPercent?: number;
}

/**
 * The evaluation of readings through the whole stack (docs/geofence-evaluation.md): readings posted to
 * the gateway, stored by the DMS, published on JetStream, evaluated by the worker into visits, alerts,
 * events and transitions. Event times start just after each device's assignment and move forward in
 * seconds. With one device per shipment its watermark is the horizon: a decision is published with the
 * reading that confirms it. A last reading far later ("the flush") moves it past everything before.
 */
describe('evaluation of readings', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let base: string;
  let oms: pg.Client;

  beforeAll(async () => {
    stack = await TestStack.start({
      workers: 1,
      env: { EVALUATION_LATENESS_SECONDS: String(LATENESS_SECONDS), EVALUATION_DELAY_MS: '20', EVALUATION_SWEEP_INTERVAL_MS: '100' },
    });
    tenant = await createTenant(stack, { accounts: 2 });
    base = `/v1/accounts/${tenant.accountIds[0]}`;
    oms = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
    await oms.connect();
  });
  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
  });

  /** A new place: its id, a position at its centre and one far outside. */
  async function place(options: { dwellSeconds?: number; account?: number } = {}): Promise<{ id: string; centre: { lat: number; lng: number }; inside: Position; far: Position }> {
    const centre = spot();
    const body = { location: centre, radiusMeters: RADIUS, dwellSeconds: options.dwellSeconds ?? 2 };
    const { id } = (await createPointOfInterest(stack, tenant, { account: options.account, body })).pointOfInterest;
    return { id, centre, inside: at(centre, 0), far: at(centre, 5000) };
  }

  /** A shipment with one device assigned; `t0` is a moment after the link, the start of its event time. */
  async function tracked(body: Record<string, unknown> = {}, account = 0): Promise<{ shipment: Shipment; device: Device; t0: number }> {
    const shipment = await createShipment(stack, tenant, { account, body });
    const { set } = await createSet(stack, tenant, shipment.id, { account });
    const { device } = await createDevice(stack, tenant, { account });
    const t0 = (await assignDevice(stack, tenant, set, device.id, account)) + 1000;
    return { shipment, device, t0 };
  }

  async function send(device: Device, readings: Reading[], account = 0): Promise<void> {
    const body = { readings: readings.map(({ recordedAt, ...values }) => ({ deviceId: device.id, recordedAt: new Date(recordedAt).toISOString(), ...values })) };
    const response = await stack.request('POST', `/v1/accounts/${tenant.accountIds[account]}/readings`, { token: tenant.token, body });
    expect(response.status, response.text).toBe(200);
    expect(response.body.rejected).toEqual([]);
  }

  /** Positions one second apart from `t0`. */
  const path = (t0: number, locations: Position[]): Reading[] => locations.map((location, i) => ({ recordedAt: t0 + i * 1000, location }));
  /** A reading far enough after `last` to make everything up to it final. */
  const flush = (last: number, location: Position): Reading => ({ recordedAt: last + (LATENESS_SECONDS + 5) * 1000, location });

  async function visits(shipmentId: string, account = 0): Promise<{ poiId: string; arrivedAt: string; departedAt: string | null }[]> {
    const response = await stack.request('GET', `/v1/accounts/${tenant.accountIds[account]}/shipments/${shipmentId}/visits`, { token: tenant.token });
    expect(response.status, response.text).toBe(200);
    return response.body.items;
  }
  async function alerts(shipmentId: string): Promise<Record<string, unknown>[]> {
    const response = await stack.request('GET', `${base}/alerts?shipmentId=${shipmentId}&limit=100`, { token: tenant.token });
    expect(response.status, response.text).toBe(200);
    return response.body.items;
  }
  async function events(type: string): Promise<{ type: string; data: Record<string, unknown> }[]> {
    const response = await stack.request('GET', `${base}/events?type=${type}&limit=100`, { token: tenant.token });
    expect(response.status, response.text).toBe(200);
    return response.body.items;
  }
  async function shipmentOf(id: string): Promise<Shipment & Record<string, unknown>> {
    const response = await stack.request('GET', `${base}/shipments/${id}`, { token: tenant.token });
    expect(response.status, response.text).toBe(200);
    return response.body;
  }
  /** The evaluation record's version: it moves with every evaluation of the shipment. */
  async function version(shipmentId: string): Promise<number> {
    const { rows } = await oms.query<{ version: string }>('SELECT version FROM shipment_evaluations WHERE shipment_id = $1', [shipmentId]);
    return Number(rows[0]?.version ?? 0);
  }
  /** Waits until the evaluation has taken in the reading recorded at `recordedAt` (the record's watermark). */
  async function evaluatedUpTo(shipmentId: string, recordedAt: number): Promise<void> {
    const watermark = async () => {
      const { rows } = await oms.query<{ watermark: string | null }>("SELECT state->>'watermark' AS watermark FROM shipment_evaluations WHERE shipment_id = $1", [shipmentId]);
      return Number(rows[0]?.watermark ?? 0);
    };
    await eventually(watermark, (value) => value >= recordedAt, `evaluation of shipment ${shipmentId} up to ${recordedAt}`);
  }
  const iso = (ms: number) => new Date(ms).toISOString();

  /**
   * Evaluates the shipment now in `worker` (which holds every partition: the only worker of the stack), as
   * its consumer or its timers would: in the partition's turn, under its lease. `now` is server time.
   */
  async function evaluateIn(worker: INestApplicationContext, shipmentId: string, readings: GeofenceReading[] = [], now?: number): Promise<void> {
    const consumer = worker.get(EvaluationConsumer);
    const scope = { tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, shipmentId };
    await consumer.evaluate(consumer.partitionOf(shipmentId), [{ ...scope, readings }], now);
  }

  /** Waits until `read` gives `expected` (deep equality), failing with the last value after the deadline. */
  async function until<T>(read: () => Promise<T>, expected: T, what: string): Promise<void> {
    await eventually(read, (value) => JSON.stringify(value) === JSON.stringify(expected), what);
  }
  const mine = (shipmentId: string, items: { data: Record<string, unknown> }[]) => items.filter((event) => event.data.shipmentId === shipmentId).map((event) => event.data);

  it('finds a visit once the shipment stayed inside for the dwell time, and its departure, with their event times and events', async () => {
    const poi = await place({ dwellSeconds: 2 });
    const { shipment, device, t0 } = await tracked();
    // Outside, then inside from t0+2 s for 4 s, then outside from t0+6 s on.
    const { inside, far } = poi;
    await send(device, [...path(t0, [far, far, inside, inside, inside, inside, far, far, far, far]), flush(t0 + 9000, far)]);
    const visit = { poiId: poi.id, arrivedAt: iso(t0 + 2000), departedAt: iso(t0 + 6000) };
    await until(() => visits(shipment.id), [visit], 'the visit');
    await until(async () => mine(shipment.id, await events('shipment.arrived')), [{ shipmentId: shipment.id, ...visit, departedAt: null }], 'shipment.arrived');
    await until(async () => mine(shipment.id, await events('shipment.departed')), [{ shipmentId: shipment.id, ...visit }], 'shipment.departed');
  });

  it('makes no visit of a stay shorter than the dwell time, of jitter in the band around the edge, or of positions whose accuracy spans the edge', async () => {
    const poi = await place({ dwellSeconds: 3 });
    const short = await tracked();
    await send(short.device, [...path(short.t0, [poi.far, poi.inside, poi.inside, poi.far, poi.far, poi.far, poi.far]), flush(short.t0 + 6000, poi.far)]);
    // Inside once, then jitter between the radius and radius + 10 %: never outside, so never a departure.
    const jitter = await tracked();
    const band = [1.02, 1.08, 1.05, 1.09].map((share) => at(poi.centre, RADIUS * share, 1));
    await send(jitter.device, [...path(jitter.t0, [poi.inside, ...band, ...band]), flush(jitter.t0 + 8000, band[0]!)]);
    // 90 m from the centre with 20 m accuracy: neither inside (90 + 20 > 100) nor outside (90 - 20 < 110).
    const vague = await tracked();
    const blur = at(poi.centre, 90, 20);
    await send(vague.device, [...path(vague.t0, [blur, blur, blur, blur, blur]), flush(vague.t0 + 4000, blur)]);

    for (const { shipment, t0 } of [short, jitter, vague]) await evaluatedUpTo(shipment.id, t0 + (LATENESS_SECONDS + 4) * 1000);
    expect(await visits(short.shipment.id)).toEqual([]);
    expect(await visits(vague.shipment.id)).toEqual([]);
    expect(await visits(jitter.shipment.id)).toEqual([{ poiId: poi.id, arrivedAt: iso(jitter.t0), departedAt: null }]);
  });

  it('gives the same visits, alerts and excursions whether readings come in order, shuffled within a batch, or in separate batches', async () => {
    const poi = await place({ dwellSeconds: 1 });
    const conditions = { temperature: { maxC: 8, minDurationSeconds: 2 }, shock: { maxG: 4 } };
    const { inside, far } = poi;
    const timeline = (t0: number): Reading[] =>
      path(t0, [far, inside, inside, inside, far, far, inside, inside, far, far, far]).map((reading, i) => ({
        ...reading,
        temperatureC: [5, 9, 10, 12, 11, 6, 9, 5, 5, 5, 5][i],
        shockG: i === 3 ? 6 : 1,
      }));
    const runs = await Promise.all([0, 1, 2].map(() => tracked({ conditions })));
    const [inOrder, shuffled, batches] = runs.map((run) => ({ ...run, readings: timeline(run.t0) })) as [
      { shipment: Shipment; device: Device; t0: number; readings: Reading[] },
      { shipment: Shipment; device: Device; t0: number; readings: Reading[] },
      { shipment: Shipment; device: Device; t0: number; readings: Reading[] },
    ];
    await send(inOrder.device, inOrder.readings);
    // The same readings in a fixed scramble, in one batch.
    const order = [7, 2, 10, 0, 5, 9, 1, 8, 4, 6, 3];
    await send(shuffled.device, order.map((i) => shuffled.readings[i]!));
    // Three batches in the device's own time order (newest-first backlogs arrive late: see the late reading
    // test), each evaluated before the next arrives, each shuffled.
    const thirds = [[2, 0, 3, 1].map((i) => batches.readings[i]!), batches.readings.slice(4, 8).reverse(), batches.readings.slice(8)];
    for (const batch of thirds) {
      const before = await version(batches.shipment.id);
      await send(batches.device, batch);
      await eventually(() => version(batches.shipment.id), (now) => now > before, 'the evaluation of a batch');
    }
    for (const run of [inOrder, shuffled, batches]) await send(run.device, [flush(run.readings.at(-1)!.recordedAt, far)]);

    const outcome = async (run: typeof inOrder) => {
      const relative = (value: unknown) => (typeof value === 'string' ? Date.parse(value) - run.t0 : value);
      const shown = await shipmentOf(run.shipment.id);
      return {
        visits: (await visits(run.shipment.id)).map((visit) => ({ ...visit, arrivedAt: relative(visit.arrivedAt), departedAt: relative(visit.departedAt) })),
        alerts: (await alerts(run.shipment.id))
          .map((alert) => ({ kind: alert.kind, status: alert.status, startedAt: relative(alert.startedAt), endedAt: relative(alert.endedAt), peakValue: alert.peakValue, threshold: alert.threshold }))
          .sort((a, b) => String(a.kind).localeCompare(String(b.kind))),
        excursions: shown.excursions,
      };
    };
    const expected = {
      visits: [
        { poiId: poi.id, arrivedAt: 1000, departedAt: 4000 },
        { poiId: poi.id, arrivedAt: 6000, departedAt: 8000 },
      ],
      alerts: [
        { kind: 'Shock', status: 'Closed', startedAt: 3000, endedAt: 4000, peakValue: 6, threshold: 4 },
        { kind: 'TemperatureHigh', status: 'Closed', startedAt: 1000, endedAt: 5000, peakValue: 12, threshold: 8 },
      ],
      excursions: { temperatureSeconds: 5, humiditySeconds: 0 },
    };
    for (const run of [inOrder, shuffled, batches]) {
      await evaluatedUpTo(run.shipment.id, flush(run.readings.at(-1)!.recordedAt, far).recordedAt);
      await until(() => outcome(run), expected, `the outcome of shipment ${run.shipment.id}`);
    }
  });

  /**
   * A second device on the shipment's set that reports once at `recordedAt` (far away), then buffers. The
   * evaluation learns a device from its first reading, so from then on it holds the horizon at its
   * watermark; the other device's readings before `recordedAt` are final already.
   */
  async function buffering(shipment: Shipment, recordedAt: number, location: Position): Promise<Device> {
    const { device } = await createDevice(stack, tenant);
    const { items: sets } = (await stack.request('GET', `${base}/shipments/${shipment.id}/sets`, { token: tenant.token })).body;
    await assignDevice(stack, tenant, sets[0], device.id);
    await send(device, [{ recordedAt, location }]);
    await evaluatedUpTo(shipment.id, recordedAt);
    return device;
  }

  it("publishes a visit a buffering device's readings find with its true, past times, and lets a reading older than its device's watermark change nothing", async () => {
    const poi = await place({ dwellSeconds: 1 });
    const { shipment, device, t0 } = await tracked();
    const start = t0 + 1000;
    const second = await buffering(shipment, start, poi.far);
    // The first device reports from far away for 20 s; the second holds the horizon at its watermark.
    const farAway = path(start, Array.from({ length: 21 }, () => poi.far));
    await send(device, farAway);
    await evaluatedUpTo(shipment.id, farAway.at(-1)!.recordedAt);
    expect(await visits(shipment.id)).toEqual([]);
    // The second device's buffer of 2..6 s arrives now, 14 s behind (within the 30 s bound): it was inside.
    await send(second, path(start + 2000, [poi.inside, poi.inside, poi.inside, poi.inside, poi.far, poi.far, poi.far]));
    const visit = { poiId: poi.id, arrivedAt: iso(start + 2000), departedAt: iso(start + 6000) };
    await until(() => visits(shipment.id), [visit], 'the late visit');
    // Recorded before the second device's watermark (start + 8 s): late, stored, but it changes nothing.
    const late = async () => (await stack.workers[0]!.get(ServiceMetrics).registry.getSingleMetric('evaluation_late_readings_total')?.get())?.values[0]?.value ?? 0;
    const lateBefore = await late();
    await send(second, [{ recordedAt: start + 500, location: poi.inside }, { recordedAt: start + 1500, location: poi.inside }]);
    const stored = (await stack.request('GET', `${base}/devices/${second.id}/readings?limit=100`, { token: tenant.token })).body.readings;
    expect(stored.map((reading: { recordedAt: string }) => reading.recordedAt)).toContain(iso(start + 500));
    await send(device, [{ recordedAt: farAway.at(-1)!.recordedAt + 1000, location: poi.far }]);
    await evaluatedUpTo(shipment.id, farAway.at(-1)!.recordedAt + 1000);
    expect(await visits(shipment.id)).toEqual([visit]);
    await until(async () => mine(shipment.id, await events('shipment.arrived')), [{ shipmentId: shipment.id, ...visit, departedAt: null }], 'shipment.arrived');
    expect(await late()).toBe(lateBefore + 2);
  });

  it("publishes a single tracker's arrival within seconds of the reading that confirms it, not after the lateness bound", async () => {
    const poi = await place({ dwellSeconds: 2 });
    const { shipment, device, t0 } = await tracked();
    await send(device, path(t0, [poi.far, poi.inside, poi.inside]));
    await evaluatedUpTo(shipment.id, t0 + 2000);
    expect(await visits(shipment.id)).toEqual([]);
    // The reading at arrivedAt + dwell confirms it; nothing after it.
    const sent = Date.now();
    await send(device, [{ recordedAt: t0 + 3000, location: poi.inside }]);
    const arrival = [{ shipmentId: shipment.id, poiId: poi.id, arrivedAt: iso(t0 + 1000), departedAt: null }];
    await eventually(async () => mine(shipment.id, await events('shipment.arrived')), (found) => JSON.stringify(found) === JSON.stringify(arrival), 'shipment.arrived', (LATENESS_SECONDS * 1000) / 3);
    expect(Date.now() - sent).toBeLessThan((LATENESS_SECONDS * 1000) / 3);
  });

  it('a second tracker that buffers holds back only its own shipment, until its readings come', async () => {
    const poi = await place({ dwellSeconds: 1 });
    const single = await tracked();
    const pair = await tracked();
    const second = await buffering(pair.shipment, pair.t0, poi.far);
    const journey = [poi.far, poi.inside, poi.inside, poi.inside];
    await send(pair.device, path(pair.t0, journey));
    await send(single.device, path(single.t0, journey));
    await until(() => visits(single.shipment.id), [{ poiId: poi.id, arrivedAt: iso(single.t0 + 1000), departedAt: null }], 'the single tracker\'s visit');
    await evaluatedUpTo(pair.shipment.id, pair.t0 + 3000);
    expect(await visits(pair.shipment.id)).toEqual([]);
    // The second tracker's buffer, in its own order: far until 1 s, then nothing new; its watermark passes the dwell.
    await send(second, path(pair.t0 + 1000, [poi.far, poi.far, poi.far]));
    await until(() => visits(pair.shipment.id), [{ poiId: poi.id, arrivedAt: iso(pair.t0 + 1000), departedAt: null }], 'the pair\'s visit');
  });

  it('keeps the watermarks through a worker restart: the restored state still waits for the buffering tracker', async () => {
    const poi = await place({ dwellSeconds: 1 });
    const { shipment, device, t0 } = await tracked();
    const second = await buffering(shipment, t0, poi.far);
    await send(device, path(t0, [poi.far, poi.inside, poi.inside, poi.inside, poi.inside]));
    await evaluatedUpTo(shipment.id, t0 + 4000);
    const { rows } = await oms.query<{ devices: Record<string, { w: number }> }>("SELECT state->'devices' AS devices FROM shipment_evaluations WHERE shipment_id = $1", [shipment.id]);
    expect(rows[0]!.devices[device.id]!.w).toBe(t0 + 4000);
    expect(rows[0]!.devices[second.id]!.w).toBe(t0);
    // A fresh worker: nothing in memory; the state comes back from the record and the DMS's readings.
    await stack.stopWorkers();
    const fresh = await stack.startWorker();
    // Evaluated there now (as a timer would): restored, the second device still holds the horizon.
    await evaluateIn(fresh, shipment.id);
    expect(await visits(shipment.id)).toEqual([]);
    await send(second, path(t0 + 1000, [poi.inside, poi.far, poi.far]));
    // Inside from 1 s (either device), the dwell passed at 2 s: the second's watermark (3 s) passes it.
    const visit = { poiId: poi.id, arrivedAt: iso(t0 + 1000), departedAt: null };
    await until(() => visits(shipment.id), [visit], 'the visit after the restart');
    // The feed is filled from the stream, a moment after the visit's commit: one arrival, not one per worker.
    await until(async () => mine(shipment.id, await events('shipment.arrived')), [{ shipmentId: shipment.id, ...visit }], 'shipment.arrived after the restart');
  });

  it('starts a shipment leaving its origin and delivers it arriving at its destination, at the visits\' times, with autoTransitions', async () => {
    const origin = await place({ dwellSeconds: 1 });
    const destination = await place({ dwellSeconds: 1 });
    const body = { autoTransitions: true, originId: origin.id, destinationId: destination.id };
    const auto = await tracked(body);
    const manual = await tracked({ ...body, autoTransitions: false });
    const wrongWay = await tracked(body);
    const journey = [origin.inside, origin.inside, origin.inside, origin.far, origin.far, destination.inside, destination.inside, destination.inside];
    for (const run of [auto, manual]) await send(run.device, [...path(run.t0, journey), flush(run.t0 + 7000, destination.inside)]);
    // Straight to the destination without leaving the origin: delivering a Planned shipment is invalid.
    await send(wrongWay.device, [...path(wrongWay.t0, [destination.inside, destination.inside, destination.inside]), flush(wrongWay.t0 + 2000, destination.inside)]);

    await until(async () => String((await shipmentOf(auto.shipment.id)).status), 'Delivered', 'the automatic delivery');
    const delivered = await shipmentOf(auto.shipment.id);
    expect(delivered).toMatchObject({ departedAt: iso(auto.t0 + 3000), deliveredAt: iso(auto.t0 + 5000) });
    const lifecycle = async (type: string) => (await events(type)).filter((event) => event.data.id === auto.shipment.id).map((event) => event.data.status);
    // The feed is filled from the stream, a moment after the commit.
    await until(() => lifecycle('shipment.started'), ['InTransit'], 'shipment.started');
    await until(() => lifecycle('shipment.delivered'), ['Delivered'], 'shipment.delivered');

    for (const run of [manual, wrongWay]) await evaluatedUpTo(run.shipment.id, run.t0 + (LATENESS_SECONDS + 2) * 1000);
    expect((await visits(manual.shipment.id)).length).toBe(2);
    expect(await shipmentOf(manual.shipment.id)).toMatchObject({ status: 'Planned', departedAt: null, updatedAt: manual.shipment.updatedAt });
    expect(await visits(wrongWay.shipment.id)).toEqual([{ poiId: destination.id, arrivedAt: iso(wrongWay.t0), departedAt: null }]);
    expect(await shipmentOf(wrongWay.shipment.id)).toMatchObject({ status: 'Planned', deliveredAt: null, updatedAt: wrongWay.shipment.updatedAt });
  });

  it('opens and closes every kind of range alert, with its threshold and peak, and their events', async () => {
    const conditions = {
      temperature: { minC: 2, maxC: 8 },
      humidity: { minPercent: 20, maxPercent: 80 },
      shock: { maxG: 4 },
      light: { maxLux: 100 },
      battery: { minPercent: 20 },
    };
    const { shipment, device, t0 } = await tracked({ conditions });
    const fine = { temperatureC: 5, humidityPercent: 50, shockG: 1, lightLux: 10, batteryPercent: 90 };
    const values = [
      fine,
      { temperatureC: 1, humidityPercent: 90, shockG: 5, lightLux: 500, batteryPercent: 10 },
      { temperatureC: 0, humidityPercent: 95, shockG: 7, lightLux: 300, batteryPercent: 5 },
      fine,
      { ...fine, temperatureC: 10, humidityPercent: 10 },
      { ...fine, temperatureC: 12, humidityPercent: 5 },
      fine,
    ];
    await send(device, [...values.map((value, i) => ({ recordedAt: t0 + i * 1000, ...value })), { recordedAt: t0 + (LATENESS_SECONDS + 10) * 1000, ...fine }]);
    const expected = [
      { kind: 'BatteryLow', startedAt: 1000, endedAt: 3000, threshold: 20, peakValue: 5 },
      { kind: 'HumidityHigh', startedAt: 1000, endedAt: 3000, threshold: 80, peakValue: 95 },
      { kind: 'HumidityLow', startedAt: 4000, endedAt: 6000, threshold: 20, peakValue: 5 },
      { kind: 'Light', startedAt: 1000, endedAt: 3000, threshold: 100, peakValue: 500 },
      { kind: 'Shock', startedAt: 1000, endedAt: 3000, threshold: 4, peakValue: 7 },
      { kind: 'TemperatureHigh', startedAt: 4000, endedAt: 6000, threshold: 8, peakValue: 12 },
      { kind: 'TemperatureLow', startedAt: 1000, endedAt: 3000, threshold: 2, peakValue: 0 },
    ].map((alert) => ({ ...alert, status: 'Closed', deviceId: device.id, shipmentId: shipment.id, startedAt: iso(t0 + alert.startedAt), endedAt: iso(t0 + alert.endedAt) }));
    const shown = async () =>
      (await alerts(shipment.id))
        .map(({ kind, startedAt, endedAt, threshold, peakValue, status, deviceId, shipmentId }) => ({ kind, startedAt, endedAt, threshold, peakValue, status, deviceId, shipmentId }))
        .sort((a, b) => String(a.kind).localeCompare(String(b.kind)));
    await until(shown, expected, 'the seven alerts');
    const ofShipment = async (type: string) => (await events(type)).filter((event) => event.data.shipmentId === shipment.id).length;
    await until(async () => [await ofShipment('alert.opened'), await ofShipment('alert.closed')], [7, 7], 'seven alert.opened and seven alert.closed');
    expect((await shipmentOf(shipment.id)).excursions).toEqual({ temperatureSeconds: 4, humiditySeconds: 4 });
  });

  it('opens one alert however many batches of one excursion two workers evaluate at once', async () => {
    const second = await stack.startWorker();
    try {
      const { shipment, device, t0 } = await tracked({ conditions: { temperature: { maxC: 8 } } });
      const batches = Array.from({ length: 8 }, (_, b) => Array.from({ length: 5 }, (_, i) => ({ recordedAt: t0 + (b * 5 + i) * 1000, temperatureC: 9 + b })));
      // Sent at once, so stored and evaluated in any order: a batch older than the device's watermark is late
      // (it decides nothing), so when the alert starts depends on that order; that there is one does not.
      await Promise.all(batches.map((batch) => send(device, batch)));
      await send(device, [{ recordedAt: t0 + (LATENESS_SECONDS + 50) * 1000, temperatureC: 20 }]);
      await evaluatedUpTo(shipment.id, t0 + (LATENESS_SECONDS + 50) * 1000);
      const open = await alerts(shipment.id);
      expect(open.map(({ kind, status }) => ({ kind, status }))).toEqual([{ kind: 'TemperatureHigh', status: 'Open' }]);
      const started = (Date.parse(open[0]!.startedAt as string) - t0) / 1000;
      expect(started % 5).toBe(0); // the first reading of one of the batches
      expect(open[0]!.peakValue).toBeGreaterThanOrEqual(9 + started / 5);
      await until(async () => (await events('alert.opened')).filter((event) => event.data.shipmentId === shipment.id).length, 1, 'one alert.opened');
    } finally {
      await second.close();
      stack.workers.splice(stack.workers.indexOf(second), 1);
    }
  });

  it('a device silent for the bound stops holding back: what the other devices\' readings decide is published then', async () => {
    const poi = await place({ dwellSeconds: 1 });
    const { shipment, device, t0 } = await tracked();
    await buffering(shipment, t0, poi.far);
    await send(device, path(t0 + 1000, [poi.inside, poi.inside, poi.inside]));
    await evaluatedUpTo(shipment.id, t0 + 3000);
    // Half the bound later, the silent device still holds the horizon at its watermark.
    await evaluateIn(stack.workers[0]!, shipment.id, [], Date.now() + (LATENESS_SECONDS / 2) * 1000);
    expect(await visits(shipment.id)).toEqual([]);
    // The timers look again when it has been silent for the bound.
    const { rows } = await oms.query<{ due_at: Date }>('SELECT due_at FROM shipment_evaluations WHERE shipment_id = $1', [shipment.id]);
    expect(rows[0]!.due_at.getTime()).toBeLessThanOrEqual(Date.now() + LATENESS_SECONDS * 1000);
    // The bound in server time later (the timers would evaluate it then): the same as the sweep does.
    await evaluateIn(stack.workers[0]!, shipment.id, [], Date.now() + (LATENESS_SECONDS + 1) * 1000);
    expect(await visits(shipment.id)).toEqual([{ poiId: poi.id, arrivedAt: iso(t0 + 1000), departedAt: null }]);
  });

  it('opens SignalLoss after the silence while InTransit, from a timer that survives a restart, and closes it with the next reading', async () => {
    const { shipment, device } = await tracked({ conditions: { signalLoss: { maxSilenceSeconds: 2 } } });
    const quiet = await tracked({ conditions: { signalLoss: { maxSilenceSeconds: 1 } } });
    for (const run of [shipment, quiet.shipment]) {
      const started = await stack.request('POST', `${base}/shipments/${run.id}/start`, { token: tenant.token });
      expect(started.status, started.text).toBe(204);
    }
    await send(device, [{ recordedAt: Date.now(), temperatureC: 5 }]);
    const { readings: stored } = (await stack.request('GET', `${base}/devices/${device.id}/readings`, { token: tenant.token })).body;
    const receivedAt = Date.parse(stored[0].receivedAt);
    await evaluatedUpTo(shipment.id, Date.parse(stored[0].recordedAt));
    // The worker goes away and another starts: the timer is in PostgreSQL, the state restored from it and the DMS.
    await stack.stopWorkers();
    await stack.startWorker();
    const signalLoss = async (id: string) => (await alerts(id)).filter((alert) => alert.kind === 'SignalLoss');
    await eventually(() => signalLoss(shipment.id), (found) => found.length === 1, 'SignalLoss', 20000);
    expect((await signalLoss(shipment.id))[0]).toMatchObject({ status: 'Open', deviceId: null, startedAt: iso(receivedAt + 2000), threshold: 2, endedAt: null });
    // A shipment that never reported: silent since it started.
    await eventually(() => signalLoss(quiet.shipment.id), (found) => found.length === 1 && found[0]?.status === 'Open', 'SignalLoss of the silent shipment', 20000);

    await send(device, [{ recordedAt: Date.now(), temperatureC: 5 }]);
    await eventually(() => signalLoss(shipment.id), (found) => found[0]?.status === 'Closed', 'SignalLoss closed by the next reading');
    expect(await signalLoss(shipment.id)).toHaveLength(1);
  });

  it('evaluates a shipment only against its own account\'s places, and forgets a shipment once it closes', async () => {
    const theirs = await place({ account: 1 });
    const { shipment, device, t0 } = await tracked({ conditions: { temperature: { maxC: 8 } } });
    await send(device, [...path(t0, [theirs.inside, theirs.inside, theirs.inside, theirs.inside]), flush(t0 + 3000, theirs.inside)]);
    await evaluatedUpTo(shipment.id, flush(t0 + 3000, theirs.inside).recordedAt);
    expect(await visits(shipment.id)).toEqual([]);
    for (const action of ['start', 'deliver', 'complete']) {
      const response = await stack.request('POST', `${base}/shipments/${shipment.id}/${action}`, { token: tenant.token });
      expect(response.status, response.text).toBe(204);
    }
    await eventually(version.bind(null, shipment.id), (value) => value === 0, 'the closed shipment forgotten');
  });

  it("looks an account's places up again after every change to them, through the API or in bulk statements, and not after another account's", async () => {
    const cache = stack.workers[0]!.get(PlaceCache);
    const accounts = tenant.accountIds.map((accountId) => ({ tenantId: tenant.tenantId, accountId }));
    const placesPath = (account: number) => `/v1/accounts/${tenant.accountIds[account]}/points-of-interest`;
    const request = async (method: string, path: string, body?: Record<string, unknown>) => {
      const response = await stack.request(method, path, { token: tenant.token, body });
      expect(response.status, response.text).toBeLessThan(300);
      return response.body as { id: string };
    };
    let held = await cache.forAccount(accounts[0]!);
    /** Account 0's index after a change to its places: a new one, with `expected` as each place is (undefined: gone). */
    async function rebuilt(expected: Record<string, Record<string, number> | undefined>): Promise<void> {
      const index = await cache.forAccount(accounts[0]!);
      expect(index).not.toBe(held);
      for (const [id, place] of Object.entries(expected)) {
        if (place) expect(index.get(id), id).toMatchObject(place);
        else expect(index.get(id), id).toBeUndefined();
      }
      held = index;
    }
    /** After a change to the other account's places, account 0's index is still the one held, not built again. */
    const unchanged = async () => expect(await cache.forAccount(accounts[0]!)).toBe(held);
    await unchanged();

    // Through the API: created, edited (moved and widened), deleted.
    const centre = spot();
    const { id } = await request('POST', placesPath(0), { name: 'Moving', kind: 'Warehouse', location: centre, radiusMeters: RADIUS });
    await rebuilt({ [id]: { ...centre, radiusMeters: RADIUS } });
    const moved = spot();
    await request('PATCH', `${placesPath(0)}/${id}`, { location: moved, radiusMeters: 2 * RADIUS });
    await rebuilt({ [id]: { ...moved, radiusMeters: 2 * RADIUS } });
    await request('PATCH', `${placesPath(0)}/${id}`, { dwellSeconds: 7 });
    await rebuilt({ [id]: { ...moved, dwellSeconds: 7 } });
    await request('DELETE', `${placesPath(0)}/${id}`);
    await rebuilt({ [id]: undefined });

    // The other account's places change: account 0's version does not move; theirs does.
    const theirs = await request('POST', placesPath(1), { name: 'Theirs', kind: 'Port', location: spot() });
    await unchanged();
    expect((await cache.forAccount(accounts[1]!)).get(theirs.id)).toBeDefined();
    await request('PATCH', `${placesPath(1)}/${theirs.id}`, { radiusMeters: 3 * RADIUS });
    await unchanged();
    expect((await cache.forAccount(accounts[1]!)).get(theirs.id)).toMatchObject({ radiusMeters: 3 * RADIUS });

    // Bulk statements (an import, a script): one statement over several places of both accounts. The
    // update leaves updated_at as it was: the version moves with the rows, whatever the statement writes.
    const rows = [0, 0, 1].map((account) => ({ id: randomUUID(), accountId: tenant.accountIds[account]!, ...spot() }));
    await oms.query(
      `INSERT INTO points_of_interest (id, tenant_id, account_id, name, kind, lat, lng, created_at, updated_at)
       SELECT id, $1, account_id, 'Imported', 'Other', lat, lng, now(), now()
         FROM unnest($2::uuid[], $3::uuid[], $4::float8[], $5::float8[]) AS r(id, account_id, lat, lng)`,
      [tenant.tenantId, rows.map((row) => row.id), rows.map((row) => row.accountId), rows.map((row) => row.lat), rows.map((row) => row.lng)],
    );
    await rebuilt({ [rows[0]!.id]: { lat: rows[0]!.lat, lng: rows[0]!.lng }, [rows[1]!.id]: { lat: rows[1]!.lat, lng: rows[1]!.lng }, [rows[2]!.id]: undefined });
    await oms.query('UPDATE points_of_interest SET lat = lat + 0.01 WHERE id = ANY($1)', [rows.map((row) => row.id)]);
    await rebuilt({ [rows[0]!.id]: { lat: rows[0]!.lat + 0.01, lng: rows[0]!.lng }, [rows[1]!.id]: { lat: rows[1]!.lat + 0.01, lng: rows[1]!.lng } });
    await oms.query('UPDATE points_of_interest SET lat = lat - 0.01 WHERE id = $1', [rows[2]!.id]);
    await unchanged();
    await oms.query('UPDATE points_of_interest SET lat = lat WHERE false');
    await unchanged();
    await oms.query('DELETE FROM points_of_interest WHERE id = ANY($1)', [rows.map((row) => row.id)]);
    await rebuilt({ [rows[0]!.id]: undefined, [rows[1]!.id]: undefined });
    expect((await cache.forAccount(accounts[1]!)).get(rows[2]!.id)).toBeUndefined();
  });

  it("moves an account's places version once per transaction when two change its places at once, at each commit and not before", async () => {
    const scope = { tenantId: tenant.tenantId, accountId: tenant.accountIds[0]! };
    const rows = [spot(), spot()].map((centre) => ({ id: randomUUID(), ...centre }));
    await oms.query(
      `INSERT INTO points_of_interest (id, tenant_id, account_id, name, kind, lat, lng, created_at, updated_at)
       SELECT id, $1, $2, 'Imported', 'Other', lat, lng, now(), now() FROM unnest($3::uuid[], $4::float8[], $5::float8[]) AS r(id, lat, lng)`,
      [scope.tenantId, scope.accountId, rows.map((row) => row.id), rows.map((row) => row.lat), rows.map((row) => row.lng)],
    );
    const version = async () =>
      (await oms.query<{ version: string }>('SELECT version FROM points_of_interest_versions WHERE tenant_id = $1 AND account_id = $2', [scope.tenantId, scope.accountId])).rows[0]?.version;
    const clients = [0, 1].map(() => new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL }));
    await Promise.all(clients.map((client) => client.connect()));
    try {
      const before = await version();
      for (const client of clients) await client.query('BEGIN');
      const move = (i: number) => clients[i]!.query('UPDATE points_of_interest SET lat = lat + 0.01 WHERE id = $1', [rows[i]!.id]);
      await move(0);
      expect(await version()).toBe(before);
      // The second transaction's bump waits for the first's row of the version, then moves it again.
      const second = move(1);
      await clients[0]!.query('COMMIT');
      const first = await version();
      expect(first).not.toBe(before);
      await second;
      expect(await version()).toBe(first);
      await clients[1]!.query('COMMIT');
      const both = await version();
      expect([before, first]).not.toContain(both);
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
    const index = await stack.workers[0]!.get(PlaceCache).forAccount(scope);
    for (const row of rows) expect(index.get(row.id)).toMatchObject({ lat: row.lat + 0.01, lng: row.lng });
    await oms.query('DELETE FROM points_of_interest WHERE id = ANY($1)', [rows.map((row) => row.id)]);
  });

  it('evaluates against a place moved since its last evaluation, and no longer against a deleted one', async () => {
    const poi = await place({ dwellSeconds: 2 });
    const elsewhere = spot();
    const there = at(elsewhere, 0);
    const { shipment, device, t0 } = await tracked();
    // Inside the spot before the place is there: no visit (and the worker's index of the account is built).
    const before = flush(t0 + 9000, poi.far);
    await send(device, [...path(t0, [poi.far, poi.far, there, there, there, there, poi.far, poi.far, poi.far, poi.far]), before]);
    await evaluatedUpTo(shipment.id, before.recordedAt);
    expect(await visits(shipment.id)).toEqual([]);

    const response = await stack.request('PATCH', `${base}/points-of-interest/${poi.id}`, { token: tenant.token, body: { location: elsewhere } });
    expect(response.status, response.text).toBe(200);
    const t1 = before.recordedAt + 1000;
    await send(device, [...path(t1, [poi.far, poi.far, there, there, there, there, poi.far, poi.far, poi.far, poi.far]), flush(t1 + 9000, poi.far)]);
    await until(() => visits(shipment.id), [{ poiId: poi.id, arrivedAt: iso(t1 + 2000), departedAt: iso(t1 + 6000) }], 'the visit of the moved place');

    // Deleted: another shipment of the account staying at the spot finds nothing there.
    const deleted = await stack.request('DELETE', `${base}/points-of-interest/${poi.id}`, { token: tenant.token });
    expect(deleted.status, deleted.text).toBe(204);
    const other = await tracked();
    const last = flush(other.t0 + 9000, poi.far);
    await send(other.device, [...path(other.t0, [poi.far, poi.far, there, there, there, there, poi.far, poi.far, poi.far, poi.far]), last]);
    await evaluatedUpTo(other.shipment.id, last.recordedAt);
    expect(await visits(other.shipment.id)).toEqual([]);
  });

  it('makes final what a shipment retained when it closes: the visit and the alert its last readings decide, the alert ended at the close', async () => {
    const poi = await place({ dwellSeconds: 1 });
    const { shipment, device, t0 } = await tracked({ conditions: { temperature: { maxC: 8 } } });
    // A second device that reported at t0 and buffers holds the horizon there: nothing is final.
    await buffering(shipment, t0, poi.far);
    // Inside from t0+1 s, outside from t0+3 s for the dwell time, too warm from t0+1 s on.
    const readings = path(t0, [poi.far, poi.inside, poi.inside, poi.far, poi.far]).map((reading, i) => ({ ...reading, temperatureC: i === 0 ? 5 : 10 }));
    await send(device, readings);
    await evaluatedUpTo(shipment.id, t0 + 4000);
    expect(await visits(shipment.id)).toEqual([]);
    expect(await alerts(shipment.id)).toEqual([]);
    await clockPast(t0 + 4000);
    for (const action of ['start', 'deliver', 'complete']) {
      const response = await stack.request('POST', `${base}/shipments/${shipment.id}/${action}`, { token: tenant.token });
      expect(response.status, response.text).toBe(204);
    }
    const completedAt = (await shipmentOf(shipment.id)).completedAt as string;
    const visit = { poiId: poi.id, arrivedAt: iso(t0 + 1000), departedAt: iso(t0 + 3000) };
    await until(() => visits(shipment.id), [visit], 'the visit');
    await until(async () => mine(shipment.id, await events('shipment.departed')), [{ shipmentId: shipment.id, ...visit }], 'shipment.departed');
    const shown = async () => (await alerts(shipment.id)).map(({ kind, startedAt, endedAt, status, peakValue }) => ({ kind, startedAt, endedAt, status, peakValue }));
    await until(shown, [{ kind: 'TemperatureHigh', startedAt: iso(t0 + 1000), endedAt: completedAt, status: 'Closed', peakValue: 10 }], 'the alert ended at the close');
    await eventually(version.bind(null, shipment.id), (value) => value === 0, 'the closed shipment forgotten');
  });

  it('keeps a due time still ahead when the next is later by less than the slack, so that most updates leave the indexed due_at alone', async () => {
    const shipment = await createShipment(stack, tenant, {});
    await oms.query('INSERT INTO shipment_evaluations (shipment_id, tenant_id, account_id) VALUES ($1, $2, $3)', [shipment.id, tenant.tenantId, tenant.accountIds[0]]);
    const worker = stack.workers[0]!;
    const records = worker.get(EvaluationRecordRepository);
    const start = Date.now();
    /** Saves a state due `seconds` after `start` (null: none), in `manager`; answers the due time stored, in seconds after `start`. */
    const saved = async (seconds: number | null, manager = worker.get(DataSource).manager) => {
      await records.save(manager, [{ shipmentId: shipment.id, version: 0, state: initialState(), dueAt: seconds === null ? null : new Date(start + seconds * 1000) }]);
      const [row]: { due_at: Date | null }[] = await manager.query('SELECT due_at FROM shipment_evaluations WHERE shipment_id = $1', [shipment.id]);
      return row!.due_at === null ? null : (row!.due_at.getTime() - start) / 1000;
    };
    const slack = DUE_AT_SLACK_SECONDS;
    expect(await saved(600)).toBe(600);
    expect(await saved(600 + slack / 2)).toBe(600);
    expect(await saved(600 + slack - 1)).toBe(600);
    expect(await saved(600 + slack + 1)).toBe(600 + slack + 1);
    expect(await saved(640)).toBe(640);
    expect(await saved(null)).toBeNull();
    // A due time already passed (the timer fired early and found nothing due) is never kept. In one
    // transaction, so that the timers' sweep never sees the past due time.
    await worker.get(DataSource).transaction(async (manager) => {
      await manager.query("UPDATE shipment_evaluations SET due_at = now() - interval '1 second' WHERE shipment_id = $1", [shipment.id]);
      expect(await saved(30, manager)).toBe(30);
    });
  });

  it('changes nothing when a batch comes again after its commit (a worker killed before its ack), in the same worker or a fresh one', async () => {
    const poi = await place({ dwellSeconds: 1 });
    const { shipment, device, t0 } = await tracked({ conditions: { temperature: { maxC: 8 } } });
    const readings = [...path(t0, [poi.far, poi.inside, poi.inside, poi.far, poi.far]), flush(t0 + 4000, poi.far)].map((reading, i) => ({ ...reading, temperatureC: i === 2 ? 12 : 5 }));
    await send(device, readings);
    await evaluatedUpTo(shipment.id, readings.at(-1)!.recordedAt);
    const before = { visits: await visits(shipment.id), alerts: await alerts(shipment.id), version: await version(shipment.id) };
    expect(before.visits).toHaveLength(1);
    expect(before.alerts).toHaveLength(1);
    // The readings exactly as the stream carried them (with their receipts), handed over again.
    const { readings: stored } = (await stack.request('GET', `${base}/devices/${device.id}/readings?limit=100`, { token: tenant.token })).body;
    const again = stored.map((reading: Record<string, unknown>) => ({ ...reading, deviceId: device.id }));
    await evaluateIn(stack.workers[0]!, shipment.id, again);
    // A fresh worker (the partitions handed over to it) has nothing in memory: it restores the state from the record and the DMS first.
    await stack.stopWorkers();
    const fresh = await stack.startWorker();
    await evaluateIn(fresh, shipment.id, again);
    expect(await version(shipment.id)).toBe(before.version + 2);
    expect(await visits(shipment.id)).toEqual(before.visits);
    expect(await alerts(shipment.id)).toEqual(before.alerts);
    const count = async (type: string) => (await events(type)).filter((event) => event.data.shipmentId === shipment.id).length;
    await until(async () => [await count('shipment.arrived'), await count('shipment.departed'), await count('alert.opened'), await count('alert.closed')], [1, 1, 1, 1], 'each event once');
  });
});
