import { randomUUID } from 'node:crypto';
import type { ShipmentSet } from '@tracking/contracts';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { createItem, itemBody, itemsPath } from '../factories/item.factory.js';
import { createSet, setBody, setsPath } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS, UUID_V7 } from '../support/http-assertions.js';
import { describeClosedShipmentWrites } from '../support/closed-shipment-behaviour.js';
import { connectOms } from '../support/oms-database.js';
import { describePaging, expectCursorRefused } from '../support/paging-behaviour.js';
import {
  expectDeleteHonoursIfMatch,
  expectNotFound,
  expectPatchHonoursIfMatch,
  FOREIGN_FIELD_CASES,
  NOT_UUIDS,
  STRONG_ETAG,
  UNKNOWN_ID,
  UNMATCHABLE_IF_MATCH,
} from '../support/resource-assertions.js';
import { TestStack } from '../support/stack.js';

const FIELDS = ['id', 'shipmentId', 'name', 'kind', 'deviceIds', 'createdAt', 'updatedAt'].sort();
const KINDS = ['Pallet', 'Parcel', 'Container', 'Tote', 'Other'];

describe('sets over HTTP', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let otherTenant: TestTenant;
  let oms: pg.Client;
  let shipmentId: string;
  let path: string;

  beforeAll(async () => {
    stack = await TestStack.start();
    // Account 0 for most tests, 1 as "another account of the same tenant".
    tenant = await createTenant(stack, { accounts: 2 });
    otherTenant = await createTenant(stack);
    shipmentId = (await createShipment(stack, tenant)).id;
    path = setsPath(tenant, shipmentId);
    oms = await connectOms(stack);
  });
  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
  });

  const newShipment = async (account = 0) => (await createShipment(stack, tenant, { account })).id as string;
  const post = (body: unknown, at = path) => stack.request('POST', at, { token: tenant.token, body });
  const get = (id: string, at = path) => stack.request('GET', `${at}/${id}`, { token: tenant.token });
  const list = (query = '', at = path) => stack.request('GET', `${at}${query}`, { token: tenant.token });
  const patch = (id: string, body: unknown, headers?: Record<string, string>, at = path) =>
    stack.request('PATCH', `${at}/${id}`, { token: tenant.token, body, headers });
  const del = (id: string, headers?: Record<string, string>, at = path) =>
    stack.request('DELETE', `${at}/${id}`, { token: tenant.token, headers });
  const create = async (body: Record<string, unknown> = {}, onShipment = shipmentId) =>
    (await createSet(stack, tenant, onShipment, { body })).set;

  describe('POST /shipments/{shipmentId}/sets', () => {
    it('answers 201 with the whole set, a Location and an ETag', async () => {
      const before = Date.now();
      const created = await post({ name: 'Pallet 1 of 3', kind: 'Pallet' });
      const after = Date.now();

      expect(created.status, created.text).toBe(201);
      const set = created.body;
      expect(Object.keys(set).sort()).toEqual(FIELDS);
      expect(set).toMatchObject({ shipmentId, name: 'Pallet 1 of 3', kind: 'Pallet', deviceIds: [] });
      expect(set.id).toMatch(UUID_V7);
      expect(set.createdAt).toMatch(TIMESTAMP_MS);
      expect(set.updatedAt).toBe(set.createdAt);
      expect(Date.parse(set.createdAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(set.createdAt)).toBeLessThanOrEqual(after + 1000);
      expect(created.headers.get('location')).toBe(`${path}/${set.id}`);
      expect(created.headers.get('etag')).toMatch(STRONG_ETAG);

      const fetched = await get(set.id);
      expect(fetched.status).toBe(200);
      expect(fetched.body).toEqual(set);
      expect(fetched.headers.get('etag')).toBe(created.headers.get('etag'));
    });

    it('accepts the shipment id in upper case', async () => {
      const created = await post(setBody(), setsPath(tenant, shipmentId.toUpperCase()));
      expect(created.status, created.text).toBe(201);
      expect(created.body.shipmentId).toBe(shipmentId);
      expect(created.headers.get('location')).toBe(`${path}/${created.body.id}`);
    });

    it.each(KINDS)('accepts the kind %s', async (kind) => {
      const created = await post(setBody({ kind }));
      expect(created.status, created.text).toBe(201);
      expect(created.body.kind).toBe(kind);
    });

    it.each([
      ['a name of 1 character', 'x'],
      ['a name of 200 characters', 'n'.repeat(200)],
      ['a name with non-ASCII characters', 'Palette “Zoll” ✓ 3/12'],
    ])('accepts %s', async (_case, name) => {
      const created = await post(setBody({ name }));
      expect(created.status, created.text).toBe(201);
      expect(created.body.name).toBe(name);
    });

    it.each([
      ['a missing name', { name: undefined }, 'name', 'Required'],
      ['a null name', { name: null }, 'name', 'InvalidFormat'],
      ['a numeric name', { name: 42 }, 'name', 'InvalidFormat'],
      ['an array name', { name: ['a'] }, 'name', 'InvalidFormat'],
      ['an empty name', { name: '' }, 'name', 'OutOfRange'],
      ['a name of 201 characters', { name: 'n'.repeat(201) }, 'name', 'OutOfRange'],
      ['a missing kind', { kind: undefined }, 'kind', 'Required'],
      ['a null kind', { kind: null }, 'kind', 'InvalidFormat'],
      ['an unknown kind', { kind: 'Crate' }, 'kind', 'InvalidFormat'],
      ['a kind in the wrong case', { kind: 'pallet' }, 'kind', 'InvalidFormat'],
      ['a numeric kind', { kind: 1 }, 'kind', 'InvalidFormat'],
      ...FOREIGN_FIELD_CASES,
    ])('rejects %s with 400 InvalidParameter', async (_case, overrides, field, issue) => {
      expectInvalidParameter(await post(setBody(overrides)), field, issue);
    });

    it('creates nothing when it refuses a body', async () => {
      const fresh = setsPath(tenant, await newShipment());
      expect((await post(setBody({ name: '' }), fresh)).status).toBe(400);
      expect((await list('', fresh)).body.items).toEqual([]);
    });

    it('rejects a body that is not an object with 400 MalformedRequest, and unparseable JSON too', async () => {
      expectError(await post([setBody()]), 400, 'MalformedRequest');
      const raw = await stack.request('POST', path, { token: tenant.token, rawBody: '{"name":', headers: { 'content-type': 'application/json' } });
      expectError(raw, 400, 'MalformedRequest');
    });

    it('rejects a body that is not JSON with 415 UnsupportedMediaType', async () => {
      const response = await stack.request('POST', path, { token: tenant.token, rawBody: 'name=x', headers: { 'content-type': 'text/plain' } });
      expectError(response, 415, 'UnsupportedMediaType');
    });

    it('validates the body before looking the shipment up', async () => {
      expectInvalidParameter(await post(setBody({ kind: 'Crate' }), setsPath(tenant, UNKNOWN_ID)), 'kind', 'InvalidFormat');
    });
  });

  describePaging('GET /shipments/{shipmentId}/sets', 'kind', () => ({
    newCollection: async () => setsPath(tenant, await newShipment()),
    create: async (at) => (await post(setBody(), at)).body,
    list: (at, query = '') => list(query, at),
  }));

  describe('GET /shipments/{shipmentId}/sets: scope', () => {
    it("lists only the shipment's sets, and refuses a cursor of another shipment or collection as InvalidCursor", async () => {
      const shipment = await newShipment();
      const [a, b] = [await create({}, shipment), await create({}, shipment)];
      const other = await newShipment();
      await create({}, other);
      await create({}, other);
      const here = (query?: string) => list(query, setsPath(tenant, shipment));
      expect((await here()).body.items).toEqual([a, b]);

      await expectCursorRefused((query) => list(query, setsPath(tenant, other)), here);
      await createItem(stack, tenant, a);
      await createItem(stack, tenant, a);
      await expectCursorRefused((query) => list(query, itemsPath(tenant, a)), here);
      await expectCursorRefused((query) => list(query, `/v1/accounts/${tenant.accountIds[0]}/shipments`), here);
    });
  });

  describe('GET /shipments/{shipmentId}/sets/{setId}', () => {
    it('answers 200 with the set and its ETag', async () => {
      const { set, etag } = await createSet(stack, tenant, shipmentId);
      const response = await get(set.id);
      expect(response.status).toBe(200);
      expect(response.body).toEqual(set);
      expect(response.headers.get('etag')).toBe(etag);
    });

    it('accepts the ids in upper case', async () => {
      const set = await create();
      const response = await get(set.id.toUpperCase(), setsPath(tenant, shipmentId.toUpperCase()));
      expect(response.status).toBe(200);
      expect(response.body).toEqual(set);
    });
  });

  describe('PATCH /shipments/{shipmentId}/sets/{setId}', () => {
    it('changes the name and answers 200 with the new state and a new ETag', async () => {
      const { set, etag } = await createSet(stack, tenant, shipmentId);
      const response = await patch(set.id, { name: 'Renamed' });
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ ...set, name: 'Renamed', updatedAt: response.body.updatedAt });
      expect(response.body.updatedAt).toMatch(TIMESTAMP_MS);
      expect(Date.parse(response.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(set.updatedAt));
      expect(response.headers.get('etag')).toMatch(STRONG_ETAG);
      expect(response.headers.get('etag')).not.toBe(etag);
      const fetched = await get(set.id);
      expect(fetched.body).toEqual(response.body);
      expect(fetched.headers.get('etag')).toBe(response.headers.get('etag'));
    });

    it.each([
      ['the kind', { kind: 'Container' }],
      ['both fields', { name: 'Container 7', kind: 'Container' }],
    ])('changes %s and leaves the rest alone', async (_case, change) => {
      const set = await create({ kind: 'Tote' });
      const response = await patch(set.id, change);
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ ...set, ...change, updatedAt: response.body.updatedAt });
      expect((await get(set.id)).body).toEqual(response.body);
    });

    it('keeps version and updatedAt when the patch changes nothing', async () => {
      const { set, etag } = await createSet(stack, tenant, shipmentId);
      for (const body of [{}, { name: set.name }, { name: set.name, kind: set.kind }]) {
        const response = await patch(set.id, body, { 'if-match': etag });
        expect(response.status, response.text).toBe(200);
        expect(response.body).toEqual(set);
        expect(response.headers.get('etag')).toBe(etag);
      }
    });

    it.each([
      ['a null name', { name: null }, 'name', 'InvalidFormat'],
      ['a numeric name', { name: 1 }, 'name', 'InvalidFormat'],
      ['an empty name', { name: '' }, 'name', 'OutOfRange'],
      ['a name of 201 characters', { name: 'n'.repeat(201) }, 'name', 'OutOfRange'],
      ['a null kind', { kind: null }, 'kind', 'InvalidFormat'],
      ['an unknown kind', { kind: 'Crate' }, 'kind', 'InvalidFormat'],
      ...FOREIGN_FIELD_CASES,
      ['deviceIds with a device', { deviceIds: [randomUUID()] }, 'deviceIds', 'ReadOnly'],
    ])('rejects %s with 400 InvalidParameter and changes nothing', async (_case, body, field, issue) => {
      const { set, etag } = await createSet(stack, tenant, shipmentId);
      expectInvalidParameter(await patch(set.id, body), field, issue);
      const after = await get(set.id);
      expect(after.body).toEqual(set);
      expect(after.headers.get('etag')).toBe(etag);
    });

    it('rejects a body that is not an object with 400 MalformedRequest', async () => {
      const set = await create();
      expectError(await patch(set.id, [{ name: 'x' }]), 400, 'MalformedRequest');
    });

    it('honours If-Match: stale -> 412 and unchanged, current -> 200, * -> 200', async () => {
      const { set, etag } = await createSet(stack, tenant, shipmentId);
      await expectPatchHonoursIfMatch(
        (body, ifMatch) => patch(set.id, body, { 'if-match': ifMatch }),
        () => get(set.id),
        etag,
        [{ name: 'Second' }, { name: 'Stale' }, { kind: 'Tote' }, { name: 'Fourth' }],
      );
    });

    it.each(UNMATCHABLE_IF_MATCH)('fails If-Match %s with 412', async (ifMatch) => {
      const set = await create();
      expectError(await patch(set.id, { name: 'x' }, { 'if-match': ifMatch }), 412, 'PreconditionFailed');
      expect((await get(set.id)).body.name).toBe(set.name);
    });
  });

  describe('DELETE /shipments/{shipmentId}/sets/{setId}', () => {
    it('answers 204 without a body; the set is gone', async () => {
      const set = await create();
      const response = await del(set.id);
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      expectError(await get(set.id), 404, 'SetNotExists');
      expectError(await del(set.id), 404, 'SetNotExists');
      expectError(await patch(set.id, { name: 'x' }), 404, 'SetNotExists');
      expect((await list('?limit=100')).text).not.toContain(set.id);
    });

    it('deletes the items of the set with it, and only those', async () => {
      const set = await create();
      const sibling = await create();
      const { item } = await createItem(stack, tenant, set);
      await createItem(stack, tenant, set);
      const { item: kept } = await createItem(stack, tenant, sibling);

      expect((await del(set.id)).status).toBe(204);
      expectError(await stack.request('GET', itemsPath(tenant, set), { token: tenant.token }), 404, 'SetNotExists');
      expectError(await stack.request('GET', `${itemsPath(tenant, set)}/${item.id}`, { token: tenant.token }), 404, 'SetNotExists');
      const rows = await oms.query('SELECT count(*)::int AS n FROM items WHERE set_id = $1', [set.id]);
      expect(rows.rows[0].n).toBe(0);
      const siblingItems = await stack.request('GET', itemsPath(tenant, sibling), { token: tenant.token });
      expect(siblingItems.body.items).toEqual([kept]);
    });

    it('honours If-Match: stale -> 412 and kept, current -> 204', async () => {
      const { set, etag } = await createSet(stack, tenant, shipmentId);
      await expectDeleteHonoursIfMatch(
        (ifMatch) => del(set.id, { 'if-match': ifMatch }),
        () => get(set.id),
        () => patch(set.id, { name: 'Changed' }),
        etag,
      );
    });

    it('deletes with If-Match: *', async () => {
      const set = await create();
      expect((await del(set.id, { 'if-match': '*' })).status).toBe(204);
      expect((await get(set.id)).status).toBe(404);
    });
  });

  describe('deleting a shipment', () => {
    it('deletes its sets and their items', async () => {
      const doomed = await newShipment();
      const set = await create({}, doomed);
      await createItem(stack, tenant, set);
      const survivor = await create();
      await oms.query('DELETE FROM shipments WHERE id = $1', [doomed]);
      const sets = await oms.query('SELECT id FROM sets WHERE shipment_id = $1', [doomed]);
      const items = await oms.query('SELECT id FROM items WHERE set_id = $1', [set.id]);
      expect(sets.rows).toEqual([]);
      expect(items.rows).toEqual([]);
      expect((await get(survivor.id)).status).toBe(200);
    });
  });

  describeClosedShipmentWrites('closed shipments', () => ({
    stack: () => stack,
    token: () => tenant.token,
    newContent: async () => {
      const closing = await newShipment();
      const { set, etag } = await createSet(stack, tenant, closing);
      return { shipmentId: closing, path: setsPath(tenant, closing), resource: set, etag };
    },
    createBody: () => setBody(),
    change: { name: 'Late rename' },
    notFound: 'SetNotExists',
  }));

  describe('sets that are not there', () => {
    let otherAccountShipment: string;
    let otherAccountSet: ShipmentSet;
    let otherTenantShipment: string;
    let otherTenantSet: ShipmentSet;
    let secret: string;

    beforeAll(async () => {
      secret = `Secret ${Math.random()}`;
      otherAccountShipment = await newShipment(1);
      otherAccountSet = (await createSet(stack, tenant, otherAccountShipment, { account: 1, body: { name: secret } })).set;
      otherTenantShipment = (await createShipment(stack, otherTenant)).id;
      otherTenantSet = (await createSet(stack, otherTenant, otherTenantShipment, { body: { name: secret } })).set;
    });

    /** Every route below one shipment path, with `setId` for the routes of one set. */
    const everyRoute = (at: string, setId: string) => [
      () => list('', at),
      () => post(setBody(), at),
      () => get(setId, at),
      () => patch(setId, { name: 'Hijacked' }, undefined, at),
      () => patch(setId, { name: 'Hijacked' }, { 'if-match': '*' }, at),
      () => del(setId, undefined, at),
      () => del(setId, { 'if-match': '"1"' }, at),
    ];
    const setRoutes = (at: string, setId: string) => everyRoute(at, setId).slice(2);

    it('answers 404 ShipmentNotExists on every route for an unknown shipment', async () => {
      await expectNotFound(everyRoute(setsPath(tenant, UNKNOWN_ID), UNKNOWN_ID), 'ShipmentNotExists', secret);
    });

    it.each(NOT_UUIDS)('answers 404 ShipmentNotExists on every route for the shipment id %s', async (id) => {
      await expectNotFound(everyRoute(setsPath(tenant, id), UNKNOWN_ID), 'ShipmentNotExists', secret);
    });

    it("answers 404 ShipmentNotExists for another account's shipment, even with its real set, and touches nothing", async () => {
      await expectNotFound(everyRoute(setsPath(tenant, otherAccountShipment), otherAccountSet.id), 'ShipmentNotExists', secret);
      const untouched = await stack.request('GET', setsPath(tenant, otherAccountShipment, 1), { token: tenant.token });
      expect(untouched.body.items).toEqual([otherAccountSet]);
    });

    it("answers 404 ShipmentNotExists for another tenant's shipment, even with its real set, and touches nothing", async () => {
      await expectNotFound(everyRoute(setsPath(tenant, otherTenantShipment), otherTenantSet.id), 'ShipmentNotExists', secret);
      const untouched = await stack.request('GET', setsPath(otherTenant, otherTenantShipment), { token: otherTenant.token });
      expect(untouched.body.items).toEqual([otherTenantSet]);
    });

    it('checks the shipment before the set: unknown shipment with a set id that is not a UUID', async () => {
      await expectNotFound(setRoutes(setsPath(tenant, UNKNOWN_ID), 'not-a-uuid'), 'ShipmentNotExists', secret);
    });

    it('answers 404 SetNotExists for an unknown set', async () => {
      await expectNotFound(setRoutes(path, UNKNOWN_ID), 'SetNotExists', secret);
    });

    it.each(NOT_UUIDS)('answers 404 SetNotExists for the set id %s', async (id) => {
      await expectNotFound(setRoutes(path, id), 'SetNotExists', secret);
    });

    it('answers 404 SetNotExists for a set of another shipment of the same account, and touches nothing', async () => {
      const { set: elsewhere, path: elsewherePath } = await createSet(stack, tenant, await newShipment(), { body: { name: secret } });
      await expectNotFound(setRoutes(path, elsewhere.id), 'SetNotExists', secret);
      expect((await stack.request('GET', elsewherePath, { token: tenant.token })).body).toEqual(elsewhere);
    });

    it("answers 404 SetNotExists for a set of another account's or another tenant's shipment", async () => {
      await expectNotFound(setRoutes(path, otherAccountSet.id), 'SetNotExists', secret);
      await expectNotFound(setRoutes(path, otherTenantSet.id), 'SetNotExists', secret);
    });

    it('validates the body of a PATCH before looking the ids up', async () => {
      expectInvalidParameter(await patch(UNKNOWN_ID, { name: '' }, undefined, setsPath(tenant, UNKNOWN_ID)), 'name', 'OutOfRange');
    });
  });

  describe('access', () => {
    it('answers 401 without a token', async () => {
      const set = await create();
      for (const response of [
        await stack.request('GET', path),
        await stack.request('POST', path, { body: setBody() }),
        await stack.request('GET', `${path}/${set.id}`),
        await stack.request('PATCH', `${path}/${set.id}`, { body: { name: 'x' } }),
        await stack.request('DELETE', `${path}/${set.id}`),
      ]) {
        expect(response.status).toBe(401);
        expect(response.body).toEqual({ error: { code: 'Unauthorized', message: expect.any(String) } });
      }
    });

    it("answers 400 AccountNotFound on another tenant's account, before looking at the shipment", async () => {
      const foreign = `/v1/accounts/${otherTenant.accountIds[0]}/shipments/${UNKNOWN_ID}/sets`;
      expectInvalidParameter(await stack.request('GET', foreign, { token: tenant.token }), 'accountId', 'AccountNotFound');
      expectInvalidParameter(await stack.request('POST', foreign, { token: tenant.token, body: setBody() }), 'accountId', 'AccountNotFound');
    });

    it('lets a Viewer read but not write (403 Forbidden)', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      const admin = await stack.identity.createApplication(viewer.tenantId, 'Writer', 'Admin', '*');
      const writer = { ...viewer, token: await issueToken(stack, viewer.tenantId, admin.applicationId, admin.applicationSecret) };
      const shipment = (await createShipment(stack, writer)).id as string;
      const { set, path: setPath } = await createSet(stack, writer, shipment);
      const at = setsPath(viewer, shipment);

      expect((await stack.request('GET', at, { token: viewer.token })).body.items).toEqual([set]);
      expect((await stack.request('GET', setPath, { token: viewer.token })).body).toEqual(set);
      expectError(await stack.request('POST', at, { token: viewer.token, body: setBody() }), 403, 'Forbidden');
      expectError(await stack.request('PATCH', setPath, { token: viewer.token, body: { name: 'x' } }), 403, 'Forbidden');
      expectError(await stack.request('DELETE', setPath, { token: viewer.token }), 403, 'Forbidden');
      expectError(await stack.request('POST', `${setPath}/items`, { token: viewer.token, body: itemBody() }), 403, 'Forbidden');
      expect((await stack.request('GET', setPath, { token: viewer.token })).body).toEqual(set);
    });
  });
});
