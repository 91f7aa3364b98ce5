import { connect } from '@nats-io/transport-node';
import {
  type Device,
  type Reading,
  type ShipmentReadingsPage,
  type ShipmentReadingsRequest,
  type ShipmentSet,
  Subjects,
} from '@tracking/contracts';
import { NatsRpcClient } from '@tracking/messaging';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DmsClient } from '../../apps/oms/src/dms/dms.client.js';
import { MAX_SHIPMENT_READINGS_BYTES } from '../../apps/dms/src/readings/readings.service.js';
import { assignDevice, createDevice, unassignDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { clockPast } from '../support/clock.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/**
 * `dms.readings.ofShipment`, the OMS's question to the DMS when it restores a shipment's geofence
 * evaluation, and `DmsClient.shipmentReadings`, which pages through it.
 */
describe("a shipment's readings (dms.readings.ofShipment)", () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;
  let base: string;
  let connection: Awaited<ReturnType<typeof connect>>;
  let rpc: NatsRpcClient;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack, { accounts: 2 });
    other = await createTenant(stack);
    base = `/v1/accounts/${tenant.accountIds[0]}`;
    connection = await connect({ servers: stack.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    rpc = new NatsRpcClient(connection, stack.env.NATS_SUBJECT_PREFIX ?? '', 10_000);
  });
  afterAll(async () => {
    await connection?.close();
    await stack?.stop();
  });

  const scope = () => ({ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]! });
  const at = (t: number) => new Date(t).toISOString();

  async function shipmentWithSet(): Promise<ShipmentSet> {
    const shipment = await createShipment(stack, tenant);
    return (await createSet(stack, tenant, shipment.id)).set;
  }
  async function newDevice(): Promise<Device> {
    return (await createDevice(stack, tenant)).device;
  }
  const assign = (set: ShipmentSet, device: Device): Promise<number> => assignDevice(stack, tenant, set, device.id);
  const unassign = (set: ShipmentSet, device: Device): Promise<void> => unassignDevice(stack, tenant, set, device.id);
  /** Posts readings (API entries), in batches of 500; every one must be accepted. */
  async function send(readings: Record<string, unknown>[]): Promise<void> {
    for (let i = 0; i < readings.length; i += 500) {
      const batch = readings.slice(i, i + 500);
      const response = await stack.request('POST', `${base}/readings`, { token: tenant.token, body: { readings: batch } });
      expect(response.status, response.text).toBe(200);
      expect(response.body).toMatchObject({ accepted: batch.length, rejected: [] });
    }
  }
  const located = (device: Device, t: number, i = 0) => ({ deviceId: device.id, recordedAt: at(t), location: { lat: 50 + i * 0.001, lng: 8 + i * 0.001, accuracyMeters: 5 } });
  const temperature = (device: Device, t: number, value = 4) => ({ deviceId: device.id, recordedAt: at(t), temperatureC: value });

  function page(request: Partial<ShipmentReadingsRequest> & { shipmentId: string }): Promise<ShipmentReadingsPage> {
    return rpc.call(Subjects.dms.readings.ofShipment, { ...scope(), from: 0, limit: 5000, ...request });
  }
  /** Every page of `limit`, following `next`; the pages as they came. */
  async function pages(shipmentId: string, limit: number, from = 0): Promise<ShipmentReadingsPage[]> {
    const found: ShipmentReadingsPage[] = [];
    let after: ShipmentReadingsRequest['after'];
    do {
      const next: ShipmentReadingsPage = await page({ shipmentId, from, limit, ...(after ? { after } : {}) });
      found.push(next);
      after = next.next ?? undefined;
    } while (after);
    return found;
  }
  const keys = (readings: Reading[]) => readings.map((reading) => [Date.parse(reading.recordedAt), reading.deviceId]);
  /** (recordedAt, deviceId) order: ids compare as PostgreSQL compares UUIDs, by their lower-case hex. */
  const byKey = (x: (string | number)[], y: (string | number)[]) => (x[0] as number) - (y[0] as number) || (x[1]! < y[1]! ? -1 : x[1]! > y[1]! ? 1 : 0);
  /** A device's readings as `GET /devices/{id}/readings` shows them, by recordedAt. */
  async function listed(device: Device): Promise<Map<string, Reading>> {
    const response: HttpResult = await stack.request('GET', `${base}/devices/${device.id}/readings?limit=100`, { token: tenant.token });
    expect(response.status, response.text).toBe(200);
    return new Map((response.body.readings as Reading[]).map((reading) => [reading.recordedAt, reading]));
  }

  it('holds only what each device recorded within its periods on the shipment: moved from A to B, each gets its own part, in the API shape', async () => {
    const a = await shipmentWithSet();
    const b = await shipmentWithSet();
    const device = await newDevice();
    const before = Date.now() - 60_000;
    const startA = await assign(a, device);
    const inA = [startA + 1, startA + 2, startA + 3];
    await clockPast(inA[2]!);
    await unassign(a, device);
    const startB = await assign(b, device);
    const inB = [startB + 1, startB + 2];
    await clockPast(inB[1]!);
    await unassign(b, device);
    const after = await clockPast(Date.now());
    // One batch, sent after both moves: before any link, in A, in B (one without a location), after B.
    await send([located(device, before), ...inA.map((t, i) => located(device, t, i)), located(device, inB[0]!), temperature(device, inB[1]!), located(device, after + 1)]);

    const list = await listed(device);
    const ofA = await page({ shipmentId: a.shipmentId });
    expect(ofA).toEqual({ readings: inA.map((t) => list.get(at(t))), next: null });
    const ofB = await page({ shipmentId: b.shipmentId });
    expect(ofB).toEqual({ readings: inB.map((t) => list.get(at(t))), next: null });
    // Every field as the readings list maps it, the location null where there is none.
    expect(ofB.readings[1]).toMatchObject({ deviceId: device.id, recordedAt: at(inB[1]!), location: null, temperatureC: 4, batteryPercent: null });
    expect(ofB.readings[0]!.location).toEqual({ lat: 50, lng: 8, accuracyMeters: 5, altitudeMeters: null, speedMps: null, headingDegrees: null });
    expect(list.size).toBe(7);

    // The OMS's client gives the same.
    const client = stack.oms[0]!.get(DmsClient);
    expect(await client.shipmentReadings({ ...scope(), shipmentId: a.shipmentId, from: 0 })).toEqual(ofA.readings);
  });

  it('starts at from, inclusive', async () => {
    const set = await shipmentWithSet();
    const device = await newDevice();
    const start = await assign(set, device);
    const times = [start + 10, start + 20, start + 30, start + 40];
    await send(times.map((t) => located(device, t)));
    expect(keys((await page({ shipmentId: set.shipmentId, from: times[1]! })).readings)).toEqual(times.slice(1).map((t) => [t, device.id]));
    expect(keys((await page({ shipmentId: set.shipmentId, from: times[1]! + 1 })).readings)).toEqual(times.slice(2).map((t) => [t, device.id]));
    expect(await page({ shipmentId: set.shipmentId, from: times[3]! + 1 })).toEqual({ readings: [], next: null });
  });

  it('answers in (recordedAt, deviceId) order whatever order they arrived in, and pages through with after, ties split across pages', async () => {
    const set = await shipmentWithSet();
    const [one, two] = [await newDevice(), await newDevice()];
    await assign(set, one);
    const start = await assign(set, two);
    const times = Array.from({ length: 12 }, (_, i) => start + 1 + i);
    // Both devices at every instant, some without a location; sent newest first, the second device first.
    await send([...times].reverse().map((t, i) => (i % 3 === 0 ? temperature(two, t, i) : located(two, t, i))));
    await send([...times].reverse().map((t, i) => (i % 4 === 0 ? temperature(one, t, i) : located(one, t, i))));
    const expected = times.flatMap((t) => [[t, one.id], [t, two.id]]).sort(byKey);

    const whole = await page({ shipmentId: set.shipmentId });
    expect(keys(whole.readings)).toEqual(expected);
    expect(whole.next).toBeNull();
    expect(whole.readings.filter((reading) => reading.location === null)).toHaveLength(4 + 3);

    // An odd page size puts the two readings of one instant on two pages.
    const paged = await pages(set.shipmentId, 5);
    expect(paged.map((p) => p.readings.length)).toEqual([5, 5, 5, 5, 4]);
    for (const p of paged.slice(0, -1)) expect(p.next).toEqual({ recordedAt: Date.parse(p.readings.at(-1)!.recordedAt), deviceId: p.readings.at(-1)!.deviceId });
    expect(paged.flatMap((p) => p.readings)).toEqual(whole.readings);
    // A page that ends exactly at the last reading says so.
    expect((await pages(set.shipmentId, 24)).map((p) => [p.readings.length, p.next])).toEqual([[24, null]]);
    expect((await pages(set.shipmentId, 1)).flatMap((p) => p.readings)).toEqual(whole.readings);
    // `from` and `after` together: the later of the two bounds.
    const tail = await page({ shipmentId: set.shipmentId, from: times[6]!, after: { recordedAt: times[2]!, deviceId: one.id }, limit: 100 });
    expect(keys(tail.readings)).toEqual(expected.slice(12));
    // The after key's device id in any case.
    const [lastInstantFirst, lastInstantSecond] = expected.slice(22) as [number, string][];
    const uppercaseAfter = await page({ shipmentId: set.shipmentId, after: { recordedAt: lastInstantFirst![0], deviceId: lastInstantFirst![1].toUpperCase() } });
    expect(keys(uppercaseAfter.readings)).toEqual([lastInstantSecond]);
  });

  it('the OMS client reads every page (2000 at most each), and a page of precise readings ends early to fit a NATS message', async () => {
    const set = await shipmentWithSet();
    const [one, two] = [await newDevice(), await newDevice()];
    await assign(set, one);
    const start = await assign(set, two);
    // Every measurement with 16 or 17 significant digits: some 560 bytes of JSON a reading.
    const precise = (t: number, i: number) => ({
      deviceId: one.id,
      recordedAt: at(t),
      location: { lat: 50 + i / 3e4, lng: 8 + i / 7e4, accuracyMeters: 1 + i / 3e3, altitudeMeters: 100 + i / 7e3, speedMps: 1 + i / 3e4, headingDegrees: 1 + i / 7e1 },
      temperatureC: 4 + i / 3e3,
      humidityPercent: 40 + i / 7e3,
      shockG: 1 + i / 3e4,
      lightLux: 100 + i / 7e2,
      batteryPercent: 90 - i / 3e3,
      pressureHpa: 1000 + i / 7e3,
    });
    const oneTimes = Array.from({ length: 1700 }, (_, i) => start + 1 + i);
    const twoTimes = Array.from({ length: 700 }, (_, i) => start + 1 + i * 2);
    await send(oneTimes.map((t, i) => precise(t, i)));
    await send(twoTimes.map((t) => temperature(two, t)));
    const expected = [...oneTimes.map((t) => [t, one.id]), ...twoTimes.map((t) => [t, two.id])].sort(byKey);

    const first = await page({ shipmentId: set.shipmentId, limit: 5000 });
    expect(first.readings.length).toBeLessThan(expected.length);
    expect(JSON.stringify(first.readings).length).toBeLessThanOrEqual(MAX_SHIPMENT_READINGS_BYTES + 1);
    expect(first.next).toEqual({ recordedAt: Date.parse(first.readings.at(-1)!.recordedAt), deviceId: first.readings.at(-1)!.deviceId });
    const rest = await page({ shipmentId: set.shipmentId, limit: 5000, after: first.next! });
    expect(rest.next).toBeNull();
    expect(keys([...first.readings, ...rest.readings])).toEqual(expected);

    const client = stack.oms[0]!.get(DmsClient);
    const all = await client.shipmentReadings({ ...scope(), shipmentId: set.shipmentId, from: 0 });
    expect(all).toHaveLength(2400);
    expect(all).toEqual([...first.readings, ...rest.readings]);
    const from = twoTimes[100]!;
    expect(keys(await client.shipmentReadings({ ...scope(), shipmentId: set.shipmentId, from }))).toEqual(expected.filter(([t]) => (t as number) >= from));
  });

  it("gives nothing for another account's or tenant's shipment, an unknown shipment or an id that is not a UUID; the id in any case", async () => {
    const set = await shipmentWithSet();
    const device = await newDevice();
    const start = await assign(set, device);
    await send([located(device, start + 1), temperature(device, start + 2)]);
    const empty = { readings: [], next: null };
    expect((await page({ shipmentId: set.shipmentId })).readings).toHaveLength(2);
    expect(await page({ shipmentId: set.shipmentId.toUpperCase() })).toEqual(await page({ shipmentId: set.shipmentId }));
    expect(await page({ shipmentId: set.shipmentId, accountId: tenant.accountIds[1]! })).toEqual(empty);
    expect(await page({ shipmentId: set.shipmentId, tenantId: other.tenantId, accountId: other.accountIds[0]! })).toEqual(empty);
    expect(await page({ shipmentId: crypto.randomUUID() })).toEqual(empty);
    expect(await page({ shipmentId: 'not-a-uuid' })).toEqual(empty);
    const client = stack.oms[0]!.get(DmsClient);
    expect(await client.shipmentReadings({ ...scope(), shipmentId: crypto.randomUUID(), from: 0 })).toEqual([]);
  });

  it('refuses a limit outside 1..5000 or not an integer, a from that is not a finite number and a malformed after', async () => {
    const shipmentId = crypto.randomUUID();
    const refused = (request: Record<string, unknown>, field: string) =>
      expect(page({ shipmentId, ...request } as ShipmentReadingsRequest)).rejects.toMatchObject({ code: 'InvalidParameter', details: { field } });
    await refused({ limit: 0 }, 'limit');
    await refused({ limit: 5001 }, 'limit');
    await refused({ limit: 1.5 }, 'limit');
    await refused({ limit: '10' }, 'limit');
    await refused({ limit: undefined }, 'limit');
    await refused({ from: null }, 'from');
    await refused({ from: '2026-01-01T00:00:00Z' }, 'from');
    await refused({ from: undefined }, 'from');
    await refused({ after: { recordedAt: 1 } }, 'after');
    await refused({ after: { recordedAt: 'x', deviceId: crypto.randomUUID() } }, 'after');
    await refused({ after: null }, 'after');
    // The extremes of a number are fine: no reading lies outside them.
    expect(await page({ shipmentId, limit: 5000, from: -Number.MAX_VALUE })).toEqual({ readings: [], next: null });
    expect(await page({ shipmentId, limit: 1, from: Number.MAX_VALUE })).toEqual({ readings: [], next: null });
  });
});
