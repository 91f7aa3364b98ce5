import type { Device, Shipment, ShipmentEta } from '@tracking/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assignDevice, createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { eventually } from '../support/eventually.js';
import { TestStack } from '../support/stack.js';

/** Short, so that a device assigned but silent holds its shipment back only briefly. */
const LATENESS_SECONDS = 10;
const RADIUS = 100;
const METERS_PER_DEGREE = 111_195;

let spots = 0;
/** A new spot for each group of places (0.5 degree of longitude apart), so no test sees another's places. */
function spot(): { lat: number; lng: number } {
  return { lat: 47, lng: 2 + 0.5 * spots++ };
}
/** A position `northMeters` north of `centre`. */
const north = (centre: { lat: number; lng: number }, northMeters: number) => ({ lat: centre.lat + northMeters / METERS_PER_DEGREE, lng: centre.lng, accuracyMeters: 5 });
type Position = ReturnType<typeof north>;
interface Reading {
  recordedAt: number;
  location: Position;
}

/**
 * The estimated arrival through the whole stack (docs/eta.md): readings posted to the gateway, evaluated
 * by the worker, the estimate stored on the shipment, `shipment.eta_changed` in the feed, the filters of
 * `GET /shipments`, and the lanes' history from shipments delivered by their own readings.
 */
describe('estimated arrival', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let oms: pg.Client;

  beforeAll(async () => {
    stack = await TestStack.start({
      workers: 1,
      env: { EVALUATION_LATENESS_SECONDS: String(LATENESS_SECONDS), EVALUATION_DELAY_MS: '20', EVALUATION_SWEEP_INTERVAL_MS: '100' },
    });
    tenant = await createTenant(stack, { accounts: 2 });
    oms = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
    await oms.connect();
  });
  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
  });

  const base = (account = 0) => `/v1/accounts/${tenant.accountIds[account]}`;

  async function place(centre: { lat: number; lng: number }, account = 0): Promise<string> {
    const body = { location: { lat: centre.lat, lng: centre.lng }, radiusMeters: RADIUS, dwellSeconds: 2 };
    return (await createPointOfInterest(stack, tenant, { account, body })).pointOfInterest.id;
  }

  /** A shipment with `devices` devices assigned; `t0` is a moment after the last link, the start of its event time. */
  async function tracked(body: Record<string, unknown>, account = 0, devices = 1): Promise<{ shipment: Shipment; devices: Device[]; t0: number }> {
    const shipment = await createShipment(stack, tenant, { account, body });
    const { set } = await createSet(stack, tenant, shipment.id, { account });
    const list: Device[] = [];
    let linked = 0;
    for (let i = 0; i < devices; i++) {
      const { device } = await createDevice(stack, tenant, { account });
      linked = await assignDevice(stack, tenant, set, device.id, account);
      list.push(device);
    }
    return { shipment, devices: list, t0: linked + 1000 };
  }

  async function send(device: Device, readings: Reading[], account = 0): Promise<void> {
    const body = { readings: readings.map(({ recordedAt, location }) => ({ deviceId: device.id, recordedAt: new Date(recordedAt).toISOString(), location })) };
    const response = await stack.request('POST', `${base(account)}/readings`, { token: tenant.token, body });
    expect(response.status, response.text).toBe(200);
    expect(response.body.rejected).toEqual([]);
  }

  async function get(id: string, account = 0): Promise<{ shipment: Shipment; etag: string | null }> {
    const response = await stack.request('GET', `${base(account)}/shipments/${id}`, { token: tenant.token });
    expect(response.status, response.text).toBe(200);
    return { shipment: response.body, etag: response.headers.get('etag') };
  }

  /** Waits until the shipment's eta was made from the position recorded at `asOf`. */
  async function etaAsOf(id: string, asOf: number, account = 0): Promise<ShipmentEta> {
    const shipment = await eventually(
      async () => (await get(id, account)).shipment,
      (value) => value.eta?.asOf === new Date(asOf).toISOString(),
      `eta of ${id} as of ${new Date(asOf).toISOString()}`,
      30_000,
    );
    return shipment.eta as ShipmentEta;
  }

  async function etaEvents(shipmentId: string): Promise<{ eta: ShipmentEta; previousArrivalAt: string | null }[]> {
    const response = await stack.request('GET', `${base()}/events?type=shipment.eta_changed&limit=100`, { token: tenant.token });
    expect(response.status, response.text).toBe(200);
    return (response.body.items as { data: { shipmentId: string; eta: ShipmentEta; previousArrivalAt: string | null } }[])
      .filter((event) => event.data.shipmentId === shipmentId)
      .map((event) => ({ eta: event.data.eta, previousArrivalAt: event.data.previousArrivalAt }));
  }

  /**
   * Waits until the feed has a marker event recorded now: every event committed before it (the outbox
   * relays in commit order) is then in the feed too, so an event missing from it was never recorded.
   */
  async function feedCaughtUp(): Promise<void> {
    // A cancellation: rare enough in this file that the first page of them holds every one.
    const marker = await createShipment(stack, tenant);
    const cancelled = await stack.request('POST', `${base()}/shipments/${marker.id}/cancel`, { token: tenant.token });
    expect(cancelled.status, cancelled.text).toBe(204);
    await eventually(
      async () => {
        const response = await stack.request('GET', `${base()}/events?type=shipment.cancelled&limit=100`, { token: tenant.token });
        return response.body.items as { data: { id: string } }[];
      },
      (items) => items.some((event) => event.data.id === marker.id),
      'the marker event in the feed',
    );
  }

  /** Positions every `stepSeconds` from `t0`, moving north from `fromMeters` at `speed` m/s. */
  function drive(centre: { lat: number; lng: number }, t0: number, fromMeters: number, speed: number, steps: number, stepSeconds = 10): Reading[] {
    return Array.from({ length: steps }, (_, i) => ({ recordedAt: t0 + i * stepSeconds * 1000, location: north(centre, fromMeters + speed * i * stepSeconds) }));
  }
  const ms = (at: string) => Date.parse(at);
  const remainingTime = (eta: ShipmentEta) => ms(eta.arrivalAt) - ms(eta.asOf as string);

  it('shows the plan (basis Planned) before any position, and null without destination or plan', async () => {
    const destination = await place(spot());
    const plannedArrivalAt = new Date(Date.now() + 3 * 3600_000).toISOString();
    const planned = await createShipment(stack, tenant, { body: { destinationId: destination, plannedArrivalAt } });
    expect(planned.eta).toEqual({ arrivalAt: plannedArrivalAt, earliestAt: plannedArrivalAt, latestAt: plannedArrivalAt, remainingMeters: null, basis: 'Planned', asOf: null, calculatedAt: planned.updatedAt });
    expect((await get(planned.id)).shipment.eta).toEqual(planned.eta);
    const noDestination = await createShipment(stack, tenant, { body: { plannedArrivalAt } });
    expect(noDestination.eta).toBeNull();
    const noPlan = await createShipment(stack, tenant, { body: { destinationId: destination } });
    expect(noPlan.eta).toBeNull();
    // The plan moves with the shipment's own field.
    const later = new Date(Date.now() + 5 * 3600_000).toISOString();
    const patched = await stack.request('PATCH', `${base()}/shipments/${planned.id}`, { token: tenant.token, body: { plannedArrivalAt: later } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.eta).toMatchObject({ arrivalAt: later, basis: 'Planned' });
  });

  it('refuses eta in request bodies as ReadOnly', async () => {
    const eta = { arrivalAt: new Date().toISOString() };
    const created = await stack.request('POST', `${base()}/shipments`, { token: tenant.token, body: { name: 'with eta', eta } });
    expect(created.status, created.text).toBe(400);
    expect(created.body.error).toMatchObject({ code: 'InvalidParameter', details: { field: 'eta', issue: 'ReadOnly' } });
    const shipment = await createShipment(stack, tenant);
    const patched = await stack.request('PATCH', `${base()}/shipments/${shipment.id}`, { token: tenant.token, body: { eta: null } });
    expect(patched.status, patched.text).toBe(400);
    expect(patched.body.error).toMatchObject({ code: 'InvalidParameter', details: { field: 'eta', issue: 'ReadOnly' } });
  });

  it('estimates from positions with moving speed only: a stop delays the arrival by its length, not by a slower truck; the range narrows near the destination', async () => {
    const start = spot();
    const destination = await place(north(start, 6000));
    // Two trucks on the same road at 25 m/s; one stands 120 s at 1000 m, the other does not.
    const stopping = await tracked({ destinationId: destination });
    const steady = await tracked({ destinationId: destination });
    const before = await get(stopping.shipment.id);
    const first = drive(start, stopping.t0, 0, 25, 5); // 0 .. 1000 m in 40 s
    const stop = Array.from({ length: 12 }, (_, i) => ({ recordedAt: stopping.t0 + 50_000 + i * 10_000, location: north(start, 1000) }));
    const again = drive(start, stopping.t0 + 170_000, 1250, 25, 5); // 1250 .. 2250 m
    await send(stopping.devices[0], [...first, ...stop, ...again]);
    await send(steady.devices[0], drive(start, steady.t0, 0, 25, 10)); // 0 .. 2250 m in 90 s, no stop
    const stopped = await etaAsOf(stopping.shipment.id, again[again.length - 1].recordedAt);
    const moving = await etaAsOf(steady.shipment.id, steady.t0 + 90_000);
    expect(stopped.basis).toBe('Position');
    expect(stopped.remainingMeters).toBe(moving.remainingMeters);
    expect(stopped.remainingMeters).toBe(6000 - 100 - 2250);
    // Same place, same moving speed: the time still to go is (nearly) the same; had the stop slowed the
    // truck's speed (2250 m in 210 s rather than 90 s), it would be more than twice as long.
    expect(Math.abs(remainingTime(stopped) - remainingTime(moving)) / remainingTime(moving)).toBeLessThan(0.1);
    expect(stopped.earliestAt <= stopped.arrivalAt && stopped.arrivalAt <= stopped.latestAt).toBe(true);
    // At least ±10 % of the remaining time.
    expect(ms(stopped.arrivalAt) - ms(stopped.earliestAt)).toBeGreaterThanOrEqual(Math.floor(0.1 * remainingTime(stopped)) - 1);
    expect(ms(stopped.latestAt) - ms(stopped.arrivalAt)).toBeGreaterThanOrEqual(Math.floor(0.1 * remainingTime(stopped)) - 1);
    // Derived from readings: neither updatedAt nor the ETag moved.
    const after = await get(stopping.shipment.id);
    expect(after.shipment.updatedAt).toBe(before.shipment.updatedAt);
    expect(after.etag).toBe(before.etag);

    // The steady truck drives on at the same speed: nearer the destination, the range is narrower.
    const near = drive(start, steady.t0 + 100_000, 2500, 25, 11); // 2500 .. 5000 m
    await send(steady.devices[0], near);
    const close = await etaAsOf(steady.shipment.id, near[near.length - 1].recordedAt);
    expect(close.remainingMeters).toBe(900);
    expect(ms(close.latestAt) - ms(close.earliestAt)).toBeLessThan(ms(moving.latestAt) - ms(moving.earliestAt));
  });

  it('gives the same estimate for late and shuffled readings as for ordered ones', async () => {
    const start = spot();
    const destination = await place(north(start, 30_000));
    const late = await tracked({ destinationId: destination }, 0, 2);
    const ordered = await tracked({ destinationId: destination }, 0, 2);
    // Two devices on one truck, fixes interleaved 5 s apart; times relative to each shipment's t0.
    const track = (t0: number) => ({
      a: drive(start, t0, 0, 20, 10, 10),
      b: drive(start, t0 + 5000, 100, 20, 10, 10),
    });
    const mine = track(late.t0);
    // Device A reports first; B's fixes come after A's newer ones, shuffled.
    await send(late.devices[0], mine.a);
    const shuffled = [...mine.b].sort((x, y) => ((x.recordedAt * 7919) % 13) - ((y.recordedAt * 7919) % 13));
    await send(late.devices[1], shuffled);
    const theirs = track(ordered.t0);
    // The other truck's readings in one batch, in recordedAt order.
    const merged = [
      ...theirs.a.map((reading) => ({ ...reading, deviceId: ordered.devices[0].id })),
      ...theirs.b.map((reading) => ({ ...reading, deviceId: ordered.devices[1].id })),
    ].sort((x, y) => x.recordedAt - y.recordedAt);
    const response = await stack.request('POST', `${base()}/readings`, {
      token: tenant.token,
      body: { readings: merged.map(({ recordedAt, location, deviceId }) => ({ deviceId, recordedAt: new Date(recordedAt).toISOString(), location })) },
    });
    expect(response.status, response.text).toBe(200);
    const lateEta = await etaAsOf(late.shipment.id, mine.b[mine.b.length - 1].recordedAt);
    const orderedEta = await etaAsOf(ordered.shipment.id, theirs.b[theirs.b.length - 1].recordedAt);
    // The same readings shifted by the difference of the two t0: the same estimate, shifted alike.
    const shift = ordered.t0 - late.t0;
    expect(ms(orderedEta.arrivalAt) - ms(lateEta.arrivalAt)).toBe(shift);
    expect(ms(orderedEta.earliestAt) - ms(lateEta.earliestAt)).toBe(shift);
    expect(ms(orderedEta.latestAt) - ms(lateEta.latestAt)).toBe(shift);
    expect(orderedEta.remainingMeters).toBe(lateEta.remainingMeters);
  });

  it('publishes shipment.eta_changed from null, and when arrivalAt moves by more than max(10 min, 10 % of the remaining time), not for less', async () => {
    const start = spot();
    const destination = await place(north(start, 40_000));
    const { shipment, devices, t0 } = await tracked({ destinationId: destination });
    const first = drive(start, t0, 0, 25, 5);
    await send(devices[0], first);
    const eta1 = await etaAsOf(shipment.id, first[4].recordedAt);
    const published = await eventually(() => etaEvents(shipment.id), (events) => events.length === 1, 'the first eta_changed');
    expect(published[0]).toEqual({ eta: eta1, previousArrivalAt: null });
    // The same truck goes on at the same speed: the estimate moves by seconds, nothing is published.
    const more = drive(start, t0 + 50_000, 1250, 25, 4);
    await send(devices[0], more);
    const eta2 = await etaAsOf(shipment.id, more[3].recordedAt);
    expect(Math.abs(ms(eta2.arrivalAt) - ms(eta1.arrivalAt))).toBeLessThan(10 * 60_000);
    // Then it crawls at 3 m/s for three minutes (roadworks): its moving speed falls, the estimate moves by more than the threshold.
    const slow = drive(start, t0 + 100_000, 2060, 3, 9, 20);
    await send(devices[0], slow);
    const eta3 = await etaAsOf(shipment.id, slow[8].recordedAt);
    expect(ms(eta3.arrivalAt) - ms(eta1.arrivalAt)).toBeGreaterThan(Math.max(10 * 60_000, 0.1 * remainingTime(eta3)));
    const all = await eventually(() => etaEvents(shipment.id), (events) => events.length === 2, 'the second eta_changed');
    expect(all.map((event) => event.previousArrivalAt)).toEqual([null, eta1.arrivalAt]);
    expect(all[1].eta).toEqual(eta3);
  });

  it('counts a plan as published: an estimate within the threshold of it publishes nothing, one far from it does', async () => {
    const start = spot();
    const destination = await place(north(start, 40_000));
    // Far from the plan: published with the plan as previousArrivalAt.
    const plannedArrivalAt = new Date(Date.now() + 10 * 3600_000).toISOString();
    const { shipment, devices, t0 } = await tracked({ destinationId: destination, plannedArrivalAt });
    const readings = drive(start, t0, 0, 25, 5);
    await send(devices[0], readings);
    const eta = await etaAsOf(shipment.id, readings[4].recordedAt);
    const events = await eventually(() => etaEvents(shipment.id), (list) => list.length === 1, 'eta_changed from the plan');
    expect(events[0]).toEqual({ eta, previousArrivalAt: plannedArrivalAt });
    // A twin on the same road whose plan is that estimate plus a minute: nothing published.
    const twin = await tracked({ destinationId: destination, plannedArrivalAt });
    const shift = twin.t0 - t0;
    const patched = await stack.request('PATCH', `${base()}/shipments/${twin.shipment.id}`, {
      token: tenant.token,
      body: { plannedArrivalAt: new Date(ms(eta.arrivalAt) + shift + 60_000).toISOString() },
    });
    expect(patched.status, patched.text).toBe(200);
    await send(twin.devices[0], drive(start, twin.t0, 0, 25, 5));
    const twinEta = await etaAsOf(twin.shipment.id, twin.t0 + 40_000);
    expect(ms(twinEta.arrivalAt)).toBe(ms(eta.arrivalAt) + shift);
    await feedCaughtUp();
    expect(await etaEvents(twin.shipment.id)).toEqual([]);
  });

  it('filters shipments on eta.arrivalAt (arrivingBefore, arrivingAfter) and late', async () => {
    const destination = await place(spot());
    const tag = `eta-filter-${Date.now()}`;
    const soon = new Date(Date.now() + 2 * 3600_000).toISOString();
    const middle = new Date(Date.now() + 3 * 3600_000).toISOString();
    const later = new Date(Date.now() + 5 * 3600_000).toISOString();
    const a = await createShipment(stack, tenant, { body: { destinationId: destination, plannedArrivalAt: soon, tags: [tag] } });
    const b = await createShipment(stack, tenant, { body: { destinationId: destination, plannedArrivalAt: later, tags: [tag] } });
    await createShipment(stack, tenant, { body: { plannedArrivalAt: soon, tags: [tag] } }); // no destination: no eta
    // Late: planned in a minute, but 40 km away at 25 m/s (an hour or less).
    const start = spot();
    const far = await place(north(start, 40_000));
    const lateOne = await tracked({ destinationId: far, plannedArrivalAt: new Date(Date.now() + 60_000).toISOString(), tags: [tag] });
    const readings = drive(start, lateOne.t0, 0, 25, 5);
    await send(lateOne.devices[0], readings);
    const lateEta = await etaAsOf(lateOne.shipment.id, readings[4].recordedAt);
    expect(lateEta.arrivalAt < soon).toBe(true);
    const list = async (query: string) => {
      const response = await stack.request('GET', `${base()}/shipments?tag=${tag}&${query}`, { token: tenant.token });
      expect(response.status, response.text).toBe(200);
      return (response.body.items as Shipment[]).map((shipment) => shipment.id);
    };
    expect(await list(`arrivingBefore=${encodeURIComponent(middle)}`)).toEqual([a.id, lateOne.shipment.id]);
    expect(await list(`arrivingAfter=${encodeURIComponent(middle)}`)).toEqual([b.id]);
    expect(await list(`arrivingAfter=${encodeURIComponent(soon)}&arrivingBefore=${encodeURIComponent(middle)}`)).toEqual([a.id]);
    expect(await list('late=true')).toEqual([lateOne.shipment.id]);
    expect(await list('late=false')).toEqual([a.id, b.id]);
    // A cursor of one filter is refused with another.
    const page = await stack.request('GET', `${base()}/shipments?tag=${tag}&late=false&limit=1`, { token: tenant.token });
    expect(page.status, page.text).toBe(200);
    const other = await stack.request('GET', `${base()}/shipments?tag=${tag}&late=true&limit=1&cursor=${encodeURIComponent(page.body.metadata.nextCursor)}`, { token: tenant.token });
    expect(other.status, other.text).toBe(400);
    for (const bad of ['arrivingBefore=tomorrow', 'arrivingAfter=2026-01-01T00:00:00', 'late=yes']) {
      const response = await stack.request('GET', `${base()}/shipments?${bad}`, { token: tenant.token });
      expect(response.status, `${bad}: ${response.text}`).toBe(400);
      expect(response.body.error).toMatchObject({ code: 'InvalidParameter', details: { field: bad.split('=')[0], issue: 'InvalidFormat' } });
    }
  });

  it('filters exactly inside a 10-minute bin of the index (the bins narrow the range, the exact arrival decides)', async () => {
    const destination = await place(spot());
    const tag = `eta-bin-${Date.now()}`;
    // A bin of the index starts every 10 minutes from 2000-01-01T00:00Z; two plans 2 and 8 minutes into one.
    const bin = Math.floor((Date.now() + 4 * 3600_000) / 600_000) * 600_000;
    const at = (minutes: number) => new Date(bin + minutes * 60_000).toISOString();
    const early = await createShipment(stack, tenant, { body: { destinationId: destination, plannedArrivalAt: at(2), tags: [tag] } });
    const late = await createShipment(stack, tenant, { body: { destinationId: destination, plannedArrivalAt: at(8), tags: [tag] } });
    const list = async (query: string) => {
      const response = await stack.request('GET', `${base()}/shipments?tag=${tag}&${query}`, { token: tenant.token });
      expect(response.status, response.text).toBe(200);
      return (response.body.items as Shipment[]).map((shipment) => shipment.id);
    };
    expect(await list(`arrivingBefore=${encodeURIComponent(at(5))}`)).toEqual([early.id]);
    expect(await list(`arrivingAfter=${encodeURIComponent(at(5))}`)).toEqual([late.id]);
    // Exclusive before, inclusive after, to the millisecond.
    expect(await list(`arrivingBefore=${encodeURIComponent(at(2))}`)).toEqual([]);
    expect(await list(`arrivingAfter=${encodeURIComponent(at(8))}`)).toEqual([late.id]);
    expect(await list(`arrivingAfter=${encodeURIComponent(at(2))}&arrivingBefore=${encodeURIComponent(at(8))}`)).toEqual([early.id]);
  });

  it('learns a lane from 3 delivered trips (History basis), ends the estimate on delivery without an event, and keeps lanes per account', async () => {
    const start = spot();
    const origin = await place(start);
    const destination = await place(north(start, 3000));
    /** One trip: 10 s in the origin, 120 s at 25 m/s to the destination, 10 s in it (autoTransitions start and deliver it). */
    const trip = (t0: number): Reading[] => [
      ...Array.from({ length: 6 }, (_, i) => ({ recordedAt: t0 + i * 2000, location: north(start, 0) })),
      ...drive(start, t0 + 20_000, 250, 25, 12),
      ...Array.from({ length: 6 }, (_, i) => ({ recordedAt: t0 + 140_000 + i * 2000, location: north(start, 3000) })),
    ];
    const delivered: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { shipment, devices, t0 } = await tracked({ originId: origin, destinationId: destination, autoTransitions: true });
      await send(devices[0], trip(t0));
      delivered.push(shipment.id);
    }
    for (const id of delivered) {
      const shipment = await eventually(async () => (await get(id)).shipment, (value) => value.status === 'Delivered', `delivery of ${id}`);
      expect(shipment.eta).toBeNull();
    }
    await eventually(
      async () => (await oms.query<{ trips: number }>('SELECT trips FROM eta_lanes WHERE origin_id = $1 AND destination_id = $2', [origin, destination])).rows,
      (rows) => rows.length === 1 && rows[0].trips === 3,
      'the lane of three trips',
    );
    // Each trip was delivered by the evaluation of its one batch: delivery ended it without any eta_changed.
    await feedCaughtUp();
    for (const id of delivered) expect(await etaEvents(id)).toEqual([]);

    // A fourth trip on the lane is estimated from its history.
    const fourth = await tracked({ originId: origin, destinationId: destination, autoTransitions: true });
    const halfway = trip(fourth.t0).slice(0, 12);
    await send(fourth.devices[0], halfway);
    const eta = await etaAsOf(fourth.shipment.id, halfway[halfway.length - 1].recordedAt);
    expect(eta.basis).toBe('History');
    expect(eta.earliestAt <= eta.arrivalAt && eta.arrivalAt <= eta.latestAt).toBe(true);
    // The lane's trips took 120 s for 3000 m: the remaining ~1600 m take about a minute.
    expect(remainingTime(eta)).toBeGreaterThan(30_000);
    expect(remainingTime(eta)).toBeLessThan(180_000);

    // The same road in the other account: its own lane, no history.
    const otherStart = start;
    const otherOrigin = await place(otherStart, 1);
    const otherDestination = await place(north(otherStart, 3000), 1);
    const other = await tracked({ originId: otherOrigin, destinationId: otherDestination, autoTransitions: true }, 1);
    const otherHalf = trip(other.t0).slice(0, 12);
    await send(other.devices[0], otherHalf, 1);
    const otherEta = await etaAsOf(other.shipment.id, otherHalf[otherHalf.length - 1].recordedAt, 1);
    expect(otherEta.basis).toBe('Position');
    const lanes = await oms.query<{ account_id: string }>('SELECT account_id FROM eta_lanes WHERE origin_id = ANY($1)', [[origin, otherOrigin]]);
    expect(lanes.rows.map((row) => row.account_id)).toEqual([tenant.accountIds[0]]);
  });
});
