import type { Device, Shipment, ShipmentSet } from '@tracking/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assignDevice, createDevice, unassignDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { createSet, setsPath } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { clockPast } from '../support/clock.js';
import { eventually } from '../support/eventually.js';
import { TestStack } from '../support/stack.js';

/**
 * The bound of this stack: a device silent this long in server time no longer holds a shipment back. Longer
 * than `eventually`'s 15 s, so that a released device still holding the horizon fails the test.
 */
const LATENESS_SECONDS = 30;
const RADIUS = 100;

let places = 0;
/** A new spot for each place of the file, so no test sees another's places. */
function spot(): { lat: number; lng: number } {
  return { lat: 52.3, lng: 5 + 0.1 * places++ };
}
const at = (centre: { lat: number; lng: number }, northMeters: number) => ({ lat: centre.lat + northMeters / 111_195, lng: centre.lng, accuracyMeters: 5 });
type Position = ReturnType<typeof at>;

interface Reading {
  recordedAt: number;
  location?: Position;
  temperatureC?: number;
}

/**
 * Releases in event time (docs/geofence-evaluation.md, "Releases"): an unassign, a set delete or a close
 * reaches the evaluation as a release marker at its time in the device's stream; the released device no
 * longer counts as inside, its alerts end at the release, it holds back nothing, and its readings recorded
 * before the release still count when they come late.
 */
describe('evaluation of device releases', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let base: string;
  let dms: pg.Client;

  beforeAll(async () => {
    stack = await TestStack.start({
      workers: 1,
      env: { EVALUATION_LATENESS_SECONDS: String(LATENESS_SECONDS), EVALUATION_DELAY_MS: '20', EVALUATION_SWEEP_INTERVAL_MS: '100' },
    });
    tenant = await createTenant(stack);
    base = `/v1/accounts/${tenant.accountIds[0]}`;
    dms = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await dms.connect();
  });
  afterAll(async () => {
    await dms?.end();
    await stack?.stop();
  });

  async function place(dwellSeconds = 1): Promise<{ id: string; inside: Position; far: Position }> {
    const centre = spot();
    const body = { location: centre, radiusMeters: RADIUS, dwellSeconds };
    const { id } = (await createPointOfInterest(stack, tenant, { body })).pointOfInterest;
    return { id, inside: at(centre, 0), far: at(centre, 5000) };
  }

  async function newDevice(set: ShipmentSet): Promise<{ device: Device; assigned: number }> {
    const { device } = await createDevice(stack, tenant);
    return { device, assigned: await assignDevice(stack, tenant, set, device.id) };
  }

  async function send(device: Device, readings: Reading[]): Promise<void> {
    const body = { readings: readings.map(({ recordedAt, ...values }) => ({ deviceId: device.id, recordedAt: new Date(recordedAt).toISOString(), ...values })) };
    const response = await stack.request('POST', `${base}/readings`, { token: tenant.token, body });
    expect(response.status, response.text).toBe(200);
    expect(response.body.rejected).toEqual([]);
  }

  /** The end of the device's last assignment period, in ms rounded up (as its release marker carries it). */
  async function releasedAt(deviceId: string): Promise<number> {
    const { rows } = await dms.query<{ ms: string }>(
      `SELECT ceil(extract(epoch FROM released_at) * 1000)::bigint AS ms FROM assignment_periods
        WHERE device_id = $1 AND released_at IS NOT NULL ORDER BY released_at DESC LIMIT 1`,
      [deviceId],
    );
    if (!rows[0]) throw new Error(`device ${deviceId} was never released`);
    return Number(rows[0].ms);
  }

  async function visits(shipmentId: string): Promise<{ poiId: string; arrivedAt: string; departedAt: string | null }[]> {
    const response = await stack.request('GET', `${base}/shipments/${shipmentId}/visits`, { token: tenant.token });
    expect(response.status, response.text).toBe(200);
    return response.body.items.map(({ poiId, arrivedAt, departedAt }: Record<string, string | null>) => ({ poiId, arrivedAt, departedAt }));
  }
  async function alerts(shipmentId: string): Promise<Record<string, unknown>[]> {
    const response = await stack.request('GET', `${base}/alerts?shipmentId=${shipmentId}&limit=100`, { token: tenant.token });
    expect(response.status, response.text).toBe(200);
    return response.body.items.map(({ kind, deviceId, startedAt, endedAt, status }: Record<string, unknown>) => ({ kind, deviceId, startedAt, endedAt, status }));
  }
  async function until<T>(read: () => Promise<T>, expected: T, what: string): Promise<void> {
    await eventually(read, (value) => JSON.stringify(value) === JSON.stringify(expected), what);
  }
  const iso = (ms: number) => new Date(ms).toISOString();

  async function shipmentWithSet(body: Record<string, unknown> = {}): Promise<{ shipment: Shipment; set: ShipmentSet }> {
    const shipment = await createShipment(stack, tenant, { body });
    const { set } = await createSet(stack, tenant, shipment.id);
    return { shipment, set };
  }

  it('a tracker swap at a depot (unassign): the released tracker no longer counts as inside, the new one\'s positions give the departure', async () => {
    const depot = await place();
    const { shipment, set } = await shipmentWithSet();
    const old = await newDevice(set);
    const t0 = old.assigned + 1000;
    await send(old.device, [
      { recordedAt: t0, location: depot.far },
      { recordedAt: t0 + 1000, location: depot.inside },
      { recordedAt: t0 + 2000, location: depot.inside },
      { recordedAt: t0 + 3000, location: depot.inside },
    ]);
    await until(() => visits(shipment.id), [{ poiId: depot.id, arrivedAt: iso(t0 + 1000), departedAt: null }], 'the arrival at the depot');
    // The new tracker, put in at the depot while the old one is still there.
    const fresh = await newDevice(set);
    await clockPast(t0 + 4000);
    await send(fresh.device, [{ recordedAt: Date.now(), location: depot.inside }]);
    await unassignDevice(stack, tenant, set, old.device.id);
    const released = await releasedAt(old.device.id);
    // The shipment leaves the depot with the new tracker only; the old one, last seen inside, stays behind.
    await send(fresh.device, [
      { recordedAt: released + 1000, location: depot.far },
      { recordedAt: released + 2000, location: depot.far },
      { recordedAt: released + 3000, location: depot.far },
    ]);
    await until(() => visits(shipment.id), [{ poiId: depot.id, arrivedAt: iso(t0 + 1000), departedAt: iso(released + 1000) }], 'the departure the new tracker gives');
  });

  it('a set delete ends the released device\'s open alert at the release, and the released device holds back nothing', async () => {
    const { shipment, set } = await shipmentWithSet({ conditions: { temperature: { maxC: 8 } } });
    const { set: other } = await createSet(stack, tenant, shipment.id);
    const warm = await newDevice(set);
    const kept = await newDevice(other);
    const t0 = Math.max(warm.assigned, kept.assigned) + 1000;
    await send(warm.device, [
      { recordedAt: t0, temperatureC: 5 },
      { recordedAt: t0 + 1000, temperatureC: 10 },
    ]);
    await send(kept.device, [{ recordedAt: t0 + 1000, temperatureC: 5 }]);
    const open = { kind: 'TemperatureHigh', deviceId: warm.device.id, startedAt: iso(t0 + 1000), endedAt: null, status: 'Open' };
    await until(() => alerts(shipment.id), [open], 'the alert opened');
    await clockPast(t0 + 2000);
    const response = await stack.request('DELETE', `${setsPath(tenant, shipment.id)}/${set.id}`, { token: tenant.token });
    expect(response.status, response.text).toBe(204);
    const released = await releasedAt(warm.device.id);
    // The kept device's readings pass the release in event time (the release is folded in order, like a
    // reading); they decide alone now, published with them, not after the released device's silence.
    await send(kept.device, [
      { recordedAt: released + 1000, temperatureC: 11 },
      { recordedAt: released + 2000, temperatureC: 11 },
    ]);
    const ofDevice = (deviceId: string) => async () => (await alerts(shipment.id)).filter((alert) => alert.deviceId === deviceId);
    await until(ofDevice(warm.device.id), [{ ...open, endedAt: iso(released), status: 'Closed' }], 'the alert ended at the release');
    const keptAlert = { kind: 'TemperatureHigh', deviceId: kept.device.id, startedAt: iso(released + 1000), endedAt: null, status: 'Open' };
    await until(ofDevice(kept.device.id), [keptAlert], "the kept device's alert, without waiting for the released one");
  });

  it('a reading of the released device recorded before the release and arriving after it still counts', async () => {
    const depot = await place();
    const { shipment, set } = await shipmentWithSet();
    const leaving = await newDevice(set);
    const staying = await newDevice(set);
    const t0 = Math.max(leaving.assigned, staying.assigned) + 1000;
    // The staying device reports once, far away, then buffers: it holds the horizon at t0.
    await send(staying.device, [{ recordedAt: t0, location: depot.far }]);
    await send(leaving.device, [
      { recordedAt: t0, location: depot.far },
      { recordedAt: t0 + 1000, location: depot.inside },
      { recordedAt: t0 + 2000, location: depot.inside },
    ]);
    await clockPast(t0 + 4000);
    await unassignDevice(stack, tenant, set, leaving.device.id);
    const released = await releasedAt(leaving.device.id);
    // Recorded before the release (the device buffered it), sent after: it left the depot at t0 + 3 s.
    await send(leaving.device, [{ recordedAt: t0 + 3000, location: depot.far }]);
    // The staying device's buffer, far all along.
    await send(staying.device, [1000, 2000, 3000, 4000].map((dt) => ({ recordedAt: t0 + dt, location: depot.far })));
    await send(staying.device, [{ recordedAt: released + 2000, location: depot.far }]);
    await until(() => visits(shipment.id), [{ poiId: depot.id, arrivedAt: iso(t0 + 1000), departedAt: iso(t0 + 3000) }], 'the departure the late reading gives');
  });

  // A close writes no release marker: the closing evaluation settles and ends the alerts at the close itself.
  it('a close ends the open alerts at the close and leaves the open visit without a departure', async () => {
    const depot = await place();
    const { shipment, set } = await shipmentWithSet({ conditions: { temperature: { maxC: 8 } } });
    const { device, assigned } = await newDevice(set);
    const t0 = assigned + 1000;
    await send(device, [
      { recordedAt: t0, location: depot.far, temperatureC: 5 },
      { recordedAt: t0 + 1000, location: depot.inside, temperatureC: 10 },
      { recordedAt: t0 + 2000, location: depot.inside, temperatureC: 10 },
      { recordedAt: t0 + 3000, location: depot.inside, temperatureC: 10 },
    ]);
    await until(() => visits(shipment.id), [{ poiId: depot.id, arrivedAt: iso(t0 + 1000), departedAt: null }], 'the arrival');
    await clockPast(t0 + 4000);
    const response = await stack.request('POST', `${base}/shipments/${shipment.id}/cancel`, { token: tenant.token });
    expect(response.status, response.text).toBe(204);
    const cancelledAt = (await stack.request('GET', `${base}/shipments/${shipment.id}`, { token: tenant.token })).body.cancelledAt as string;
    const ended = { kind: 'TemperatureHigh', deviceId: device.id, startedAt: iso(t0 + 1000), endedAt: cancelledAt, status: 'Closed' };
    await until(() => alerts(shipment.id), [ended], 'the alert ended at the close');
    expect(await visits(shipment.id)).toEqual([{ poiId: depot.id, arrivedAt: iso(t0 + 1000), departedAt: null }]);
  });
});
