import { randomUUID } from 'node:crypto';
import type { TrackingEvent, Visit, VisitEventData } from '@tracking/contracts';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inEvaluation, withOutcomes } from '../factories/alert.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { createShipment, createShipmentIn } from '../factories/shipment.factory.js';
import { expectError, expectInvalidParameter } from '../support/http-assertions.js';
import { connectOms } from '../support/oms-database.js';
import { TestStack } from '../support/stack.js';
import { eventually } from '../support/eventually.js';

/*
 * Visits: `GET /shipments/{id}/visits`, and the store the evaluation of readings records arrivals and
 * departures with (`ShipmentOutcomes.recordArrival` / `recordDeparture`), each once with its event.
 */

const T0 = Date.UTC(2026, 4, 1, 6, 0, 0);
const at = (seconds: number) => new Date(T0 + seconds * 1000);

describe('visits', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let oms: pg.Client;
  let base: string;
  let poi: string;

  beforeAll(async () => {
    stack = await TestStack.start({ omsReplicas: 2 });
    tenant = await createTenant(stack, { accounts: 2 });
    oms = await connectOms(stack);
    base = `/v1/accounts/${tenant.accountIds[0]}`;
    poi = (await createPointOfInterest(stack, tenant)).pointOfInterest.id;
  });

  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
  });

  const visitsOf = async (shipmentId: string, query = '', account = 0): Promise<Visit[]> => {
    const response = await stack.request('GET', `/v1/accounts/${tenant.accountIds[account]}/shipments/${shipmentId}/visits${query}`, { token: tenant.token });
    expect(response.status, response.text).toBe(200);
    return response.body.items;
  };

  /** The feed's visit events of the shipment, once `count` of them arrived. */
  async function visitEvents(shipmentId: string, count: number): Promise<TrackingEvent<VisitEventData>[]> {
    return eventually(
      async () => {
        const page = await stack.request('GET', `${base}/events?type=shipment.arrived,shipment.departed&limit=100`, { token: tenant.token });
        return (page.body.items as TrackingEvent<VisitEventData>[]).filter((event) => event.data.shipmentId === shipmentId);
      },
      (found) => found.length >= count,
      `${count} visit events`,
    );
  }

  it('records an arrival and a departure once each, with shipment.arrived and shipment.departed carrying the event times', async () => {
    const shipment = await createShipmentIn(stack, tenant, 'InTransit');
    expect(await visitsOf(shipment.id)).toEqual([]);
    const arrival = { poiId: poi, arrivedAt: at(100) };
    expect(await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.recordArrival(arrival))).toBe(true);
    // The same decision again, on the other replica: no second visit, no second event.
    expect(await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.recordArrival(arrival), { replica: 1 })).toBe(false);
    expect(await visitsOf(shipment.id)).toEqual([{ poiId: poi, arrivedAt: at(100).toISOString(), departedAt: null }]);

    const departure = { poiId: poi, arrivedAt: at(100), departedAt: at(900) };
    expect(await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.recordDeparture(departure))).toBe(true);
    expect(await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.recordDeparture(departure), { replica: 1 })).toBe(false);
    // A published departure is never moved.
    expect(await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.recordDeparture({ ...departure, departedAt: at(950) }))).toBe(false);
    const visits = await visitsOf(shipment.id);
    expect(visits).toEqual([{ poiId: poi, arrivedAt: at(100).toISOString(), departedAt: at(900).toISOString() }]);
    expect(Object.keys(visits[0]!)).toEqual(['poiId', 'arrivedAt', 'departedAt']);

    const events = await visitEvents(shipment.id, 2);
    expect(events.map((event) => [event.type, event.data])).toEqual([
      ['shipment.arrived', { shipmentId: shipment.id, poiId: poi, arrivedAt: at(100).toISOString(), departedAt: null }],
      ['shipment.departed', { shipmentId: shipment.id, poiId: poi, arrivedAt: at(100).toISOString(), departedAt: at(900).toISOString() }],
    ]);
    // Written after the replays: had a replay written an event, it would be in the feed by now.
    const marker = await createShipmentIn(stack, tenant, 'InTransit');
    await withOutcomes(stack, tenant, marker.id, (outcomes) => outcomes.recordArrival({ poiId: poi, arrivedAt: at(1) }));
    await visitEvents(marker.id, 1);
    expect(await visitEvents(shipment.id, 2)).toHaveLength(2);
  });

  it('records a visit found late, with its true past times, beside the visit in progress at the same place', async () => {
    const shipment = await createShipment(stack, tenant);
    await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.recordArrival({ poiId: poi, arrivedAt: at(5000) }));
    await withOutcomes(stack, tenant, shipment.id, async (outcomes) => {
      expect(await outcomes.recordArrival({ poiId: poi, arrivedAt: at(1000) })).toBe(true);
      expect(await outcomes.recordDeparture({ poiId: poi, arrivedAt: at(1000), departedAt: at(2000) })).toBe(true);
    });
    expect(await visitsOf(shipment.id)).toEqual([
      { poiId: poi, arrivedAt: at(5000).toISOString(), departedAt: null },
      { poiId: poi, arrivedAt: at(1000).toISOString(), departedAt: at(2000).toISOString() },
    ]);
    // A departure of a visit never recorded records nothing.
    expect(await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.recordDeparture({ poiId: poi, arrivedAt: at(7), departedAt: at(8) }))).toBe(false);
    // The database refuses a departure before the arrival, whoever writes it.
    await expect(oms.query('UPDATE visits SET departed_at = arrived_at - interval \'1 second\' WHERE shipment_id = $1', [shipment.id])).rejects.toThrow(/visits_period_check/);
  });

  it('rolls back a visit and its event with the transaction that recorded it', async () => {
    const shipment = await createShipment(stack, tenant);
    await expect(
      withOutcomes(stack, tenant, shipment.id, async (outcomes) => {
        await outcomes.recordArrival({ poiId: poi, arrivedAt: at(1) });
        throw new Error('crashed after deciding');
      }),
    ).rejects.toThrow('crashed after deciding');
    expect(await visitsOf(shipment.id)).toEqual([]);
    // Nothing of it in the outbox; the shipment's creation event may still be there, waiting for the relay.
    const written = await oms.query(`SELECT count(*)::int AS n FROM outbox WHERE payload LIKE '%' || $1 || '%' AND payload NOT LIKE '%"type":"shipment.created"%'`, [
      shipment.id,
    ]);
    expect(written.rows[0].n).toBe(0);
  });

  it('keeps an open visit open when the shipment closes, and records nothing for a closed shipment', async () => {
    const shipment = await createShipmentIn(stack, tenant, 'InTransit');
    await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.recordArrival({ poiId: poi, arrivedAt: at(10) }));
    expect((await stack.request('POST', `${base}/shipments/${shipment.id}/cancel`, { token: tenant.token })).status).toBe(204);
    const scope = { tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, shipmentId: shipment.id };
    expect(await inEvaluation(stack, scope, (outcomes) => outcomes.recordDeparture({ poiId: poi, arrivedAt: at(10), departedAt: at(20) }))).toBeNull();
    expect(await visitsOf(shipment.id)).toEqual([{ poiId: poi, arrivedAt: at(10).toISOString(), departedAt: null }]);
  });

  it('keeps the visit when its point of interest is deleted, and drops visits with their deleted shipment', async () => {
    const place = (await createPointOfInterest(stack, tenant)).pointOfInterest.id;
    const shipment = await createShipment(stack, tenant);
    await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.recordArrival({ poiId: place, arrivedAt: at(10) }));
    expect((await stack.request('DELETE', `${base}/points-of-interest/${place}`, { token: tenant.token })).status).toBe(204);
    expect(await visitsOf(shipment.id)).toEqual([{ poiId: place, arrivedAt: at(10).toISOString(), departedAt: null }]);
    expect((await stack.request('DELETE', `${base}/shipments/${shipment.id}`, { token: tenant.token })).status).toBe(204);
    expectError(await stack.request('GET', `${base}/shipments/${shipment.id}/visits`, { token: tenant.token }), 404, 'ShipmentNotExists');
    expect((await oms.query('SELECT count(*)::int AS n FROM visits WHERE shipment_id = $1', [shipment.id])).rows[0].n).toBe(0);
  });

  it("is 404 ShipmentNotExists for an unknown, malformed or another account's shipment; a Viewer reads visits", async () => {
    expectError(await stack.request('GET', `${base}/shipments/${randomUUID()}/visits`, { token: tenant.token }), 404, 'ShipmentNotExists');
    expectError(await stack.request('GET', `${base}/shipments/nope/visits`, { token: tenant.token }), 404, 'ShipmentNotExists');
    const theirs = await createShipment(stack, tenant, { account: 1 });
    await withOutcomes(stack, tenant, theirs.id, (outcomes) => outcomes.recordArrival({ poiId: poi, arrivedAt: at(1) }), { account: 1 });
    expectError(await stack.request('GET', `${base}/shipments/${theirs.id}/visits`, { token: tenant.token }), 404, 'ShipmentNotExists');
    expect(await visitsOf(theirs.id, '', 1)).toHaveLength(1);
    // The evaluation store does not take another account's shipment either.
    expect(await inEvaluation(stack, { tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, shipmentId: theirs.id }, async () => 1)).toBeNull();

    const viewer = await createTenant(stack, { role: 'Viewer' });
    const admin = await stack.identity.createApplication(viewer.tenantId, 'Admin', 'Admin', '*');
    const token = (
      await stack.request('POST', '/v1/applications/token', {
        body: { tenantId: viewer.tenantId, applicationId: admin.applicationId, applicationSecret: admin.applicationSecret },
      })
    ).body.accessToken as string;
    const shipment = await createShipment(stack, { ...viewer, token });
    const viewed = await stack.request('GET', `/v1/accounts/${viewer.accountIds[0]}/shipments/${shipment.id}/visits`, { token: viewer.token });
    expect(viewed.status).toBe(200);
    expect(viewed.body).toEqual({ items: [], metadata: { nextCursor: null } });
  });

  it('pages visits in the order they were recorded, exactly once while visits keep being recorded, and refuses bad paging', async () => {
    const shipment = await createShipment(stack, tenant);
    const record = (n: number) => withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.recordArrival({ poiId: poi, arrivedAt: at(n) }), { replica: n % 2 });
    for (let n = 0; n < 5; n++) await record(n);
    const path = `${base}/shipments/${shipment.id}/visits`;
    const first = await stack.request('GET', `${path}?limit=2&includeTotal=true`, { token: tenant.token });
    expect(first.body.metadata).toEqual({ nextCursor: expect.any(String), total: 5 });
    const writing = (async () => {
      for (let n = 5; n < 15; n++) await record(n);
    })();
    const seen: string[] = first.body.items.map((visit: Visit) => visit.arrivedAt);
    let cursor: string | null = first.body.metadata.nextCursor;
    while (cursor) {
      const page = await stack.request('GET', `${path}?limit=2&cursor=${encodeURIComponent(cursor)}`, { token: tenant.token });
      expect(page.status, page.text).toBe(200);
      seen.push(...page.body.items.map((visit: Visit) => visit.arrivedAt));
      cursor = page.body.metadata.nextCursor;
    }
    await writing;
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.slice(0, 5)).toEqual([0, 1, 2, 3, 4].map((n) => at(n).toISOString()));
    // Whatever was recorded while paging and not seen comes after the last page, never skipped in between.
    const all = (await visitsOf(shipment.id, '?limit=100')).map((visit) => visit.arrivedAt);
    expect(all).toEqual(Array.from({ length: 15 }, (_, n) => at(n).toISOString()));
    expect(all.slice(0, seen.length)).toEqual(seen);

    expectInvalidParameter(await stack.request('GET', `${path}?limit=0`, { token: tenant.token }), 'limit', 'OutOfRange');
    expectInvalidParameter(await stack.request('GET', `${path}?poiId=${poi}`, { token: tenant.token }), 'poiId', 'UnknownField');
    const other = await createShipment(stack, tenant);
    const otherCursor = encodeURIComponent(first.body.metadata.nextCursor);
    expectInvalidParameter(await stack.request('GET', `${base}/shipments/${other.id}/visits?cursor=${otherCursor}`, { token: tenant.token }), 'cursor', 'InvalidCursor');
  });
});
