import type { Device, Shipment, ShipmentSet } from '@tracking/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBulkAssign, waitForOperation } from '../factories/bulk.factory.js';
import { assignDevice, createDevice, unassignDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { clockPast } from '../support/clock.js';
import { eventually } from '../support/eventually.js';
import { expectError, expectInvalidParameter } from '../support/http-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';

interface Point {
  recordedAt: string;
  lat: number;
  lng: number;
  accuracyMeters: number | null;
  deviceId: string;
}

describe('shipment tracks', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;
  let dms: pg.Client;
  let base: string;

  beforeAll(async () => {
    stack = await TestStack.start({ workers: 1 });
    tenant = await createTenant(stack, { accounts: 2 });
    other = await createTenant(stack);
    base = `/v1/accounts/${tenant.accountIds[0]}`;
    dms = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await dms.connect();
  });
  afterAll(async () => {
    await dms?.end();
    await stack?.stop();
  });

  async function shipmentWithSet(account = 0): Promise<{ shipment: Shipment; set: ShipmentSet }> {
    const shipment = await createShipment(stack, tenant, { account });
    const { set } = await createSet(stack, tenant, shipment.id, { account });
    return { shipment, set };
  }
  async function newDevice(account = 0): Promise<Device> {
    return (await createDevice(stack, tenant, { account })).device;
  }
  const assign = (set: ShipmentSet, device: Device): Promise<number> => assignDevice(stack, tenant, set, device.id);
  const unassign = (set: ShipmentSet, device: Device): Promise<void> => unassignDevice(stack, tenant, set, device.id);
  /** Sends positions of one device; `at` are epoch ms, the position a function of the index. */
  async function send(device: Device, at: number[], place = (i: number) => ({ lat: 50 + i * 0.001, lng: 8 + i * 0.001 })): Promise<void> {
    const readings = at.map((t, i) => ({ deviceId: device.id, recordedAt: new Date(t).toISOString(), location: { ...place(i), accuracyMeters: 5 + i } }));
    const response = await stack.request('POST', `${base}/readings`, { token: tenant.token, body: { readings } });
    expect(response.status, response.text).toBe(200);
    expect(response.body.rejected).toEqual([]);
  }
  function track(shipmentId: string, query = '', headers: Record<string, string> = {}, token = tenant.token, at = base): Promise<HttpResult> {
    return stack.request('GET', `${at}/shipments/${shipmentId}/track${query}`, { token, headers });
  }
  const times = (points: Point[]) => points.map((point) => Date.parse(point.recordedAt));

  it('holds only what a device recorded while assigned to the shipment: moved from A to B, each track has its own part, late data included', async () => {
    const a = await shipmentWithSet();
    const b = await shipmentWithSet();
    const device = await newDevice();
    const before = Date.now() - 60_000;
    const startA = await assign(a.set, device);
    const inA = [startA + 1, startA + 2, startA + 3];
    await clockPast(inA[2]!);
    await unassign(a.set, device);
    const startB = await assign(b.set, device);
    const inB = [startB + 1, startB + 2];
    // Sent after the move, and in one batch with B's: A's positions arrive late and still go to A.
    await send(device, [before, ...inA, ...inB]);

    const trackA = await track(a.shipment.id);
    expect(trackA.status, trackA.text).toBe(200);
    expect(trackA.headers.get('content-type')).toMatch(/^application\/json/);
    expect(trackA.body).toEqual({
      shipmentId: a.shipment.id,
      points: inA.map((t, i) => ({ recordedAt: new Date(t).toISOString(), lat: 50 + (i + 1) * 0.001, lng: 8 + (i + 1) * 0.001, accuracyMeters: 6 + i, deviceId: device.id })),
      metadata: { from: null, to: null, count: 3, totalPoints: 3, simplified: false },
    });
    const trackB = await track(b.shipment.id);
    expect(times(trackB.body.points)).toEqual(inB);
    expect(trackB.body.metadata).toEqual({ from: null, to: null, count: 2, totalPoints: 2, simplified: false });

    // Closing B releases the device: what it records afterwards reaches no track.
    const complete = async (action: string) =>
      expect((await stack.request('POST', `${base}/shipments/${b.shipment.id}/${action}`, { token: tenant.token })).status).toBe(204);
    await complete('start');
    await complete('deliver');
    await complete('complete');
    await send(device, [await clockPast(Date.now())]);
    expect(times((await track(b.shipment.id)).body.points)).toEqual(inB);
    expect(times((await track(a.shipment.id)).body.points)).toEqual(inA);
    const { rows } = await dms.query<{ shipment_id: string; open: boolean }>(
      'SELECT shipment_id, released_at IS NULL AS open FROM assignment_periods WHERE device_id = $1 ORDER BY assigned_at',
      [device.id],
    );
    expect(rows).toEqual([
      { shipment_id: a.shipment.id, open: false },
      { shipment_id: b.shipment.id, open: false },
    ]);
  });

  describe("the shipment's lastPosition", () => {
    const shipmentOf = async (id: string) => {
      const response = await stack.request('GET', `${base}/shipments/${id}`, { token: tenant.token });
      expect(response.status, response.text).toBe(200);
      return response;
    };
    const lastPosition = async (id: string) => (await shipmentOf(id)).body.lastPosition as Point | null;
    const at = (t: number) => new Date(t).toISOString();

    it('is the newest located reading of its devices while assigned, whatever order they arrive in; a late older one never moves it back', async () => {
      const { shipment, set } = await shipmentWithSet();
      const [one, two] = [await newDevice(), await newDevice()];
      expect(await lastPosition(shipment.id)).toBeNull();
      const before = await shipmentOf(shipment.id);
      await assign(set, one);
      const start = await assign(set, two);
      const t = [start + 10, start + 20, start + 30, start + 40];
      await clockPast(t[3]!);
      await send(one, [t[1]!], () => ({ lat: 10, lng: 20 }));
      const newest = { recordedAt: at(t[1]!), lat: 10, lng: 20, accuracyMeters: 5, deviceId: one.id };
      expect(await eventually(() => lastPosition(shipment.id), (p) => p !== null, 'the first position')).toEqual(newest);

      // Older, from the other device and late: no move. A reading without a location: no move.
      await send(two, [t[0]!], () => ({ lat: 1, lng: 2 }));
      const readings = [{ deviceId: two.id, recordedAt: at(t[2]!), temperatureC: 4 }];
      expect((await stack.request('POST', `${base}/readings`, { token: tenant.token, body: { readings } })).status).toBe(200);
      // A marker shipment proves the consumer has handled what came before (the stream is in order).
      const marker = await shipmentWithSet();
      const markerDevice = await newDevice();
      const markerStart = await assign(marker.set, markerDevice);
      await send(markerDevice, [markerStart + 1]);
      await eventually(() => lastPosition(marker.shipment.id), (p) => p !== null, 'the marker');
      expect(await lastPosition(shipment.id)).toEqual(newest);

      // Newer from the other device: it moves; derived, so neither updatedAt nor the ETag changes.
      await send(two, [t[3]!], () => ({ lat: 30, lng: 40 }));
      const moved = { recordedAt: at(t[3]!), lat: 30, lng: 40, accuracyMeters: 5, deviceId: two.id };
      expect(await eventually(() => lastPosition(shipment.id), (p) => p?.deviceId === two.id, 'the move')).toEqual(moved);
      const after = await shipmentOf(shipment.id);
      expect(after.body.updatedAt).toBe(before.body.updatedAt);
      expect(after.headers.get('etag')).toBe(before.headers.get('etag'));
      // The list shows the same (its stored JSON).
      const list = await stack.request('GET', `${base}/shipments?limit=100`, { token: tenant.token });
      expect(list.body.items.find((item: Shipment) => item.id === shipment.id).lastPosition).toEqual(moved);
    });

    it('comes only from readings recorded while assigned: those before the link and after the release reach no shipment', async () => {
      const a = await shipmentWithSet();
      const b = await shipmentWithSet();
      const device = await newDevice();
      const early = Date.now() - 60_000;
      const startA = await assign(a.set, device);
      await clockPast(startA + 1);
      await unassign(a.set, device);
      const startB = await assign(b.set, device);
      // One batch: before any link (no shipment), in A's period, in B's period.
      const readings = [
        { deviceId: device.id, recordedAt: at(early), location: { lat: 1, lng: 1 } },
        { deviceId: device.id, recordedAt: at(startA + 1), location: { lat: 2, lng: 2 } },
        { deviceId: device.id, recordedAt: at(startB + 1), location: { lat: 3, lng: 3 } },
      ];
      expect((await stack.request('POST', `${base}/readings`, { token: tenant.token, body: { readings } })).body.accepted).toBe(3);
      const inA = await eventually(() => lastPosition(a.shipment.id), (p) => p !== null, 'A');
      const inB = await eventually(() => lastPosition(b.shipment.id), (p) => p !== null, 'B');
      expect(inA).toEqual({ recordedAt: at(startA + 1), lat: 2, lng: 2, accuracyMeters: null, deviceId: device.id });
      expect(inB).toEqual({ recordedAt: at(startB + 1), lat: 3, lng: 3, accuracyMeters: null, deviceId: device.id });
    });
  });

  it('keeps one period when a device moves to another set of the same shipment, and records bulk assignments', async () => {
    const { shipment, set } = await shipmentWithSet();
    const { set: second } = await createSet(stack, tenant, shipment.id);
    const device = await newDevice();
    const start = await assign(set, device);
    await clockPast(start + 1);
    await assign(second, device);
    const bulkDevice = await newDevice();
    const operation = await startBulkAssign(stack, tenant, [{ setId: second.id, deviceId: bulkDevice.id }]);
    expect((await waitForOperation(stack, tenant, operation)).status).toBe('Succeeded');
    const after = await clockPast(Date.now());
    await send(device, [start + 1, after + 1]);
    await send(bulkDevice, [after + 2]);
    const { rows } = await dms.query<{ device_id: string; set_id: string }>(
      'SELECT device_id, set_id FROM assignment_periods WHERE shipment_id = $1 AND released_at IS NULL ORDER BY assigned_at',
      [shipment.id],
    );
    expect(rows).toEqual([
      { device_id: device.id, set_id: second.id },
      { device_id: bulkDevice.id, set_id: second.id },
    ]);
    const response = await track(shipment.id);
    expect(response.body.points.map((point: Point) => [Date.parse(point.recordedAt), point.deviceId])).toEqual([
      [start + 1, device.id],
      [after + 1, device.id],
      [after + 2, bulkDevice.id],
    ]);
  });

  it('answers in recordedAt order whatever order the readings arrived in, ties by device id', async () => {
    const { shipment, set } = await shipmentWithSet();
    const [one, two] = [await newDevice(), await newDevice()];
    await assign(set, one);
    const start = await assign(set, two);
    const at = Array.from({ length: 20 }, (_, i) => start + 1 + i);
    const shuffled = [...at].sort((x, y) => ((x * 7919) % 13) - ((y * 7919) % 13));
    for (const chunk of [shuffled.slice(10), shuffled.slice(0, 10)]) await send(one, chunk);
    await send(two, [at[5]!, at[0]!, at[19]!]);
    const response = await track(shipment.id);
    expect(response.status).toBe(200);
    const expected = [...at.map((t) => [t, one.id]), [at[0], two.id], [at[5], two.id], [at[19], two.id]].sort(
      (x, y) => (x[0] as number) - (y[0] as number) || String(x[1]).localeCompare(String(y[1])),
    );
    expect(response.body.points.map((point: Point) => [Date.parse(point.recordedAt), point.deviceId])).toEqual(expected);
  });

  describe('simplification, GeoJSON and filters', () => {
    let shipment: Shipment;
    let main: Device;
    let single: Device;
    let mainTimes: number[];
    let singleTime: number;
    const zigzag = (i: number) => ({ lat: 48 + i * 0.0005 + (i % 7 === 0 ? 0.01 : 0), lng: 11 + i * 0.001 });

    beforeAll(async () => {
      const created = await shipmentWithSet();
      shipment = created.shipment;
      main = await newDevice();
      single = await newDevice();
      await assign(created.set, single);
      const start = await assign(created.set, main);
      mainTimes = Array.from({ length: 500 }, (_, i) => start + 1 + i * 10);
      singleTime = start + 5;
      await send(main, mainTimes, zigzag);
      await send(single, [singleTime]);
    });

    it('simplifies to maxPoints with one tolerance, keeping each device’s first and last point, and says so', async () => {
      const full = await track(shipment.id, '?maxPoints=10000');
      expect(full.body.metadata).toEqual({ from: null, to: null, count: 501, totalPoints: 501, simplified: false });
      const byDefault = await track(shipment.id);
      expect(byDefault.body.metadata.count).toBe(501);

      const response = await track(shipment.id, '?maxPoints=50');
      expect(response.status).toBe(200);
      const { points, metadata } = response.body as { points: Point[]; metadata: Record<string, unknown> };
      expect(metadata).toEqual({ from: null, to: null, count: points.length, totalPoints: 501, simplified: true });
      expect(points.length).toBeLessThanOrEqual(50);
      expect(points.length).toBeGreaterThanOrEqual(40);
      const mainPoints = points.filter((point) => point.deviceId === main.id);
      expect(Date.parse(mainPoints[0]!.recordedAt)).toBe(mainTimes[0]);
      expect(Date.parse(mainPoints.at(-1)!.recordedAt)).toBe(mainTimes.at(-1));
      expect(points.filter((point) => point.deviceId === single.id)).toHaveLength(1);
      // Every kept point is one of the positions, unchanged, still in recordedAt order.
      const fullByTime = new Map((full.body.points as Point[]).map((point) => [`${point.deviceId}|${point.recordedAt}`, point]));
      for (const point of points) expect(fullByTime.get(`${point.deviceId}|${point.recordedAt}`)).toEqual(point);
      expect(times(points)).toEqual([...times(points)].sort((x, y) => x - y));
      // The spikes every seventh position are what Douglas-Peucker keeps first (each with the foot of its
      // sides), while a seventh of the positions are spikes.
      const spikes = mainPoints.filter((point) => mainTimes.indexOf(Date.parse(point.recordedAt)) % 7 === 0);
      expect(spikes.length).toBeGreaterThanOrEqual(mainPoints.length / 3);

      const endpointsOnly = await track(shipment.id, '?maxPoints=2');
      // Each device's first and last point are kept even past the budget: 2 for the main device, 1 for the single one.
      expect(endpointsOnly.body.points.map((point: Point) => [Date.parse(point.recordedAt), point.deviceId])).toEqual([
        [mainTimes[0], main.id],
        [singleTime, single.id],
        [mainTimes.at(-1), main.id],
      ]);
      expect(endpointsOnly.body.metadata).toMatchObject({ count: 3, totalPoints: 501, simplified: true });
    });

    it('answers an RFC 7946 FeatureCollection for Accept: application/geo+json, a LineString per device and a Point for a single position', async () => {
      const json = await track(shipment.id, '?maxPoints=100');
      const response = await track(shipment.id, '?maxPoints=100', { accept: 'application/geo+json' });
      expect(response.status, response.text).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/geo\+json/);
      const points = json.body.points as Point[];
      const of = (device: Device) => points.filter((point) => point.deviceId === device.id);
      expect(response.body).toEqual({
        type: 'FeatureCollection',
        features: [
          {
            type: 'Feature',
            geometry: { type: 'LineString', coordinates: of(main).map((point) => [point.lng, point.lat]) },
            properties: { deviceId: main.id, recordedAt: of(main).map((point) => point.recordedAt), accuracyMeters: of(main).map((point) => point.accuracyMeters) },
          },
          {
            type: 'Feature',
            geometry: { type: 'Point', coordinates: [of(single)[0]!.lng, of(single)[0]!.lat] },
            properties: { deviceId: single.id, recordedAt: [new Date(singleTime).toISOString()], accuracyMeters: [5] },
          },
        ],
      });
      // Quality values decide; JSON wins a tie, and a wildcard or an unknown type gets JSON.
      const preferJson = await track(shipment.id, '', { accept: 'application/geo+json;q=0.5, application/json' });
      expect(preferJson.headers.get('content-type')).toMatch(/^application\/json/);
      const preferGeo = await track(shipment.id, '', { accept: 'application/json;q=0.4, application/geo+json;q=0.9' });
      expect(preferGeo.body.type).toBe('FeatureCollection');
      expect((await track(shipment.id, '', { accept: '*/*' })).body.shipmentId).toBe(shipment.id);
      // An empty track is an empty collection.
      const empty = await track(shipment.id, `?to=${new Date(mainTimes[0]! - 1000).toISOString()}`, { accept: 'application/geo+json' });
      expect(empty.body).toEqual({ type: 'FeatureCollection', features: [] });
    });

    it('filters on recordedAt half-open, echoes the window, and on deviceId in any case', async () => {
      const from = new Date(mainTimes[10]!).toISOString();
      const to = new Date(mainTimes[20]!).toISOString();
      const window = await track(shipment.id, `?from=${encodeURIComponent(from.replace('Z', '+00:00'))}&to=${to}&maxPoints=10000`);
      expect(window.status, window.text).toBe(200);
      expect(times(window.body.points)).toEqual(mainTimes.slice(10, 20));
      expect(window.body.metadata).toEqual({ from, to, count: 10, totalPoints: 10, simplified: false });
      const onlyFrom = await track(shipment.id, `?from=${new Date(mainTimes[498]!).toISOString()}`);
      expect(times(onlyFrom.body.points)).toEqual(mainTimes.slice(498));
      expect(onlyFrom.body.metadata.to).toBeNull();
      const device = await track(shipment.id, `?deviceId=${single.id.toUpperCase()}`);
      expect(device.body.points).toEqual([{ recordedAt: new Date(singleTime).toISOString(), lat: 50, lng: 8, accuracyMeters: 5, deviceId: single.id }]);
      const unknownDevice = await track(shipment.id, `?deviceId=${crypto.randomUUID()}`);
      expect(unknownDevice.body).toEqual({ shipmentId: shipment.id, points: [], metadata: { from: null, to: null, count: 0, totalPoints: 0, simplified: false } });
      const emptyWindow = await track(shipment.id, `?from=${from}&to=${from}`);
      expect(emptyWindow.body.metadata).toEqual({ from, to: from, count: 0, totalPoints: 0, simplified: false });
    });

    it('is 404 for an unknown shipment, another account’s and another tenant’s, and for an id that is not a UUID', async () => {
      expectError(await track(crypto.randomUUID()), 404, 'ShipmentNotExists');
      expectError(await track('not-a-uuid'), 404, 'ShipmentNotExists');
      expectError(await track(shipment.id, '', {}, tenant.token, `/v1/accounts/${tenant.accountIds[1]}`), 404, 'ShipmentNotExists');
      expectError(await track(shipment.id, '', {}, other.token, `/v1/accounts/${other.accountIds[0]}`), 404, 'ShipmentNotExists');
      expectError(await track(shipment.id, '', { accept: 'application/geo+json' }, other.token, `/v1/accounts/${other.accountIds[0]}`), 404, 'ShipmentNotExists');
      expectInvalidParameter(await track(shipment.id, '', {}, other.token), 'accountId', 'AccountNotFound');
    });

    it('refuses bad parameters with 400 InvalidParameter, naming the parameter and the issue', async () => {
      const cases: [string, string, string][] = [
        ['?maxPoints=1', 'maxPoints', 'OutOfRange'],
        ['?maxPoints=10001', 'maxPoints', 'OutOfRange'],
        ['?maxPoints=1.5', 'maxPoints', 'InvalidFormat'],
        ['?maxPoints=abc', 'maxPoints', 'InvalidFormat'],
        ['?maxPoints=', 'maxPoints', 'InvalidFormat'],
        ['?maxPoints=10&maxPoints=20', 'maxPoints', 'InvalidFormat'],
        ['?from=yesterday', 'from', 'InvalidFormat'],
        ['?to=2026-13-01T00:00:00Z', 'to', 'InvalidFormat'],
        ['?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z', 'to', 'OutOfRange'],
        ['?deviceId=not-a-uuid', 'deviceId', 'InvalidFormat'],
        ['?limit=10', 'limit', 'UnknownField'],
        ['?cursor=abc', 'cursor', 'UnknownField'],
        ['?deviceId=%00', 'deviceId', 'InvalidFormat'],
      ];
      for (const [query, field, issue] of cases) expectInvalidParameter(await track(shipment.id, query), field, issue);
      // Parameters are judged before the shipment is looked up.
      expectInvalidParameter(await track(crypto.randomUUID(), '?maxPoints=0'), 'maxPoints', 'OutOfRange');
    });
  });
});
