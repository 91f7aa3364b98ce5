import type { Item, ShipmentSet } from '@tracking/contracts';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { createItem, itemBody, itemsPath } from '../factories/item.factory.js';
import { createSet, setsPath } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS, UUID_V7 } from '../support/http-assertions.js';
import { describeClosedShipmentWrites } from '../support/closed-shipment-behaviour.js';
import { closeShipment, connectOms } from '../support/oms-database.js';
import { describePaging, expectCursorRefused } from '../support/paging-behaviour.js';
import {
  BAD_METADATA_CASES,
  expectDeleteHonoursIfMatch,
  expectNotFound,
  expectPatchHonoursIfMatch,
  FOREIGN_FIELD_CASES,
  metadataOf,
  NOT_UUIDS,
  STRONG_ETAG,
  UNKNOWN_ID,
  UNMATCHABLE_IF_MATCH,
} from '../support/resource-assertions.js';
import { TestStack } from '../support/stack.js';

const FIELDS = ['id', 'shipmentId', 'setId', 'sku', 'description', 'quantity', 'unit', 'metadata', 'createdAt', 'updatedAt'].sort();

describe('items over HTTP', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let otherTenant: TestTenant;
  let oms: pg.Client;
  let shipmentId: string;
  let set: ShipmentSet;
  let path: string;

  beforeAll(async () => {
    stack = await TestStack.start();
    // Account 0 for most tests, 1 as "another account of the same tenant".
    tenant = await createTenant(stack, { accounts: 2 });
    otherTenant = await createTenant(stack);
    shipmentId = (await createShipment(stack, tenant)).id;
    set = (await createSet(stack, tenant, shipmentId)).set;
    path = itemsPath(tenant, set);
    oms = await connectOms(stack);
  });
  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
  });

  const newSet = async (onShipment = shipmentId) => (await createSet(stack, tenant, onShipment)).set;
  const newShipment = async (account = 0) => (await createShipment(stack, tenant, { account })).id as string;
  const post = (body: unknown, at = path) => stack.request('POST', at, { token: tenant.token, body });
  const get = (id: string, at = path) => stack.request('GET', `${at}/${id}`, { token: tenant.token });
  const list = (query = '', at = path) => stack.request('GET', `${at}${query}`, { token: tenant.token });
  const patch = (id: string, body: unknown, headers?: Record<string, string>, at = path) =>
    stack.request('PATCH', `${at}/${id}`, { token: tenant.token, body, headers });
  const del = (id: string, headers?: Record<string, string>, at = path) =>
    stack.request('DELETE', `${at}/${id}`, { token: tenant.token, headers });
  const create = async (body: Record<string, unknown> = {}, inSet = set) => (await createItem(stack, tenant, inSet, { body })).item;
  /** The items path of any shipment and set id, existing or not. */
  const pathOf = (shipment: string, setId: string) => `${setsPath(tenant, shipment)}/${setId}/items`;

  describe('POST /shipments/{shipmentId}/sets/{setId}/items', () => {
    it('answers 201 with the whole item and its defaults, a Location and an ETag', async () => {
      const before = Date.now();
      const created = await post({ sku: 'SKU-4711', quantity: 24 });
      const after = Date.now();

      expect(created.status, created.text).toBe(201);
      const item = created.body;
      expect(Object.keys(item).sort()).toEqual(FIELDS);
      expect(item).toMatchObject({
        shipmentId,
        setId: set.id,
        sku: 'SKU-4711',
        description: null,
        quantity: 24,
        unit: null,
        metadata: {},
      });
      expect(item.id).toMatch(UUID_V7);
      expect(item.createdAt).toMatch(TIMESTAMP_MS);
      expect(item.updatedAt).toBe(item.createdAt);
      expect(Date.parse(item.createdAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(item.createdAt)).toBeLessThanOrEqual(after + 1000);
      expect(created.headers.get('location')).toBe(`${path}/${item.id}`);
      expect(created.headers.get('etag')).toMatch(STRONG_ETAG);

      const fetched = await get(item.id);
      expect(fetched.status).toBe(200);
      expect(fetched.body).toEqual(item);
      expect(fetched.headers.get('etag')).toBe(created.headers.get('etag'));
    });

    it('stores every optional field as given', async () => {
      const body = {
        sku: 'JKT-BLUE-XL',
        description: 'Rain jacket — “blue”, size XL ✓',
        quantity: 1000000,
        unit: 'pcs',
        metadata: { lot: 'L-17', weightKg: 0.85, fragile: false, count: 12345678901234 },
      };
      const created = await post(body);
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject(body);
      expect((await get(created.body.id)).body).toEqual(created.body);
    });

    it('names the ids in lower case when the path has them in upper case', async () => {
      const upper = `${setsPath(tenant, shipmentId.toUpperCase())}/${set.id.toUpperCase()}/items`;
      const created = await post(itemBody(), upper);
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject({ shipmentId, setId: set.id });
      expect(created.headers.get('location')).toBe(`${path}/${created.body.id}`);
    });

    it.each([
      ['a sku of 1 character', { sku: 'x' }],
      ['a sku of 100 characters', { sku: 's'.repeat(100) }],
      ['a quantity of 1', { quantity: 1 }],
      ['a quantity of 1000000', { quantity: 1000000 }],
      ['an empty description', { description: '' }],
      ['a description of 2000 characters', { description: 'd'.repeat(2000) }],
      ['a null description', { description: null }],
      ['a unit of 1 character', { unit: 'm' }],
      ['a unit of 20 characters', { unit: 'u'.repeat(20) }],
      ['a null unit', { unit: null }],
      ['empty metadata', { metadata: {} }],
      ['metadata with 50 keys', { metadata: metadataOf(50) }],
      ['metadata of exactly 8 KiB', { metadata: metadataOf(3, 8192) }],
    ])('accepts %s', async (_case, overrides) => {
      const created = await post(itemBody(overrides));
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject(overrides);
    });

    it.each([
      // sku
      ['a missing sku', { sku: undefined }, 'sku', 'Required'],
      ['a null sku', { sku: null }, 'sku', 'InvalidFormat'],
      ['a numeric sku', { sku: 4711 }, 'sku', 'InvalidFormat'],
      ['an empty sku', { sku: '' }, 'sku', 'OutOfRange'],
      ['a sku of 101 characters', { sku: 's'.repeat(101) }, 'sku', 'OutOfRange'],
      // quantity
      ['a missing quantity', { quantity: undefined }, 'quantity', 'Required'],
      ['a null quantity', { quantity: null }, 'quantity', 'InvalidFormat'],
      ['a string quantity', { quantity: '2' }, 'quantity', 'InvalidFormat'],
      ['a boolean quantity', { quantity: true }, 'quantity', 'InvalidFormat'],
      ['a fractional quantity', { quantity: 1.5 }, 'quantity', 'InvalidFormat'],
      ['a quantity of 0', { quantity: 0 }, 'quantity', 'OutOfRange'],
      ['a negative quantity', { quantity: -3 }, 'quantity', 'OutOfRange'],
      ['a quantity of 1000001', { quantity: 1000001 }, 'quantity', 'OutOfRange'],
      // description
      ['a numeric description', { description: 5 }, 'description', 'InvalidFormat'],
      ['an object description', { description: { text: 'x' } }, 'description', 'InvalidFormat'],
      ['a description of 2001 characters', { description: 'd'.repeat(2001) }, 'description', 'OutOfRange'],
      // unit
      ['a numeric unit', { unit: 1 }, 'unit', 'InvalidFormat'],
      ['an empty unit', { unit: '' }, 'unit', 'OutOfRange'],
      ['a unit of 21 characters', { unit: 'u'.repeat(21) }, 'unit', 'OutOfRange'],
      ...BAD_METADATA_CASES,
      ...FOREIGN_FIELD_CASES,
    ])('rejects %s with 400 InvalidParameter', async (_case, overrides, field, issue) => {
      expectInvalidParameter(await post(itemBody(overrides)), field, issue);
    });

    it('rejects a quantity too large for a double (Infinity once parsed) as InvalidFormat', async () => {
      const response = await stack.request('POST', path, {
        token: tenant.token,
        rawBody: '{"sku":"x","quantity":1e400}',
        headers: { 'content-type': 'application/json' },
      });
      expectInvalidParameter(response, 'quantity', 'InvalidFormat');
    });

    it('creates nothing when it refuses a body', async () => {
      const fresh = itemsPath(tenant, await newSet());
      expect((await post(itemBody({ quantity: 0 }), fresh)).status).toBe(400);
      expect((await list('', fresh)).body.items).toEqual([]);
    });

    it('rejects a body that is not an object with 400 MalformedRequest, and unparseable JSON too', async () => {
      expectError(await post([itemBody()]), 400, 'MalformedRequest');
      const raw = await stack.request('POST', path, { token: tenant.token, rawBody: '{"sku":', headers: { 'content-type': 'application/json' } });
      expectError(raw, 400, 'MalformedRequest');
    });

    it('rejects a body that is not JSON with 415 UnsupportedMediaType', async () => {
      const response = await stack.request('POST', path, { token: tenant.token, rawBody: 'sku=x', headers: { 'content-type': 'text/plain' } });
      expectError(response, 415, 'UnsupportedMediaType');
    });
  });

  describePaging('GET /shipments/{shipmentId}/sets/{setId}/items', 'sku', () => ({
    newCollection: async () => itemsPath(tenant, await newSet()),
    create: async (at) => (await post(itemBody(), at)).body,
    list: (at, query = '') => list(query, at),
  }));

  describe('GET /shipments/{shipmentId}/sets/{setId}/items: scope', () => {
    it("lists only the set's items, and refuses a cursor of another set or collection as InvalidCursor", async () => {
      const here = itemsPath(tenant, await newSet());
      const [a, b] = [(await post(itemBody(), here)).body, (await post(itemBody(), here)).body];
      const sibling = await newSet();
      await create({}, sibling);
      await create({}, sibling);
      const page = (query?: string) => list(query, here);
      expect((await page()).body.items).toEqual([a, b]);

      await expectCursorRefused((query) => list(query, itemsPath(tenant, sibling)), page);
      const otherShipmentSet = await newSet(await newShipment());
      await create({}, otherShipmentSet);
      await create({}, otherShipmentSet);
      await expectCursorRefused((query) => list(query, itemsPath(tenant, otherShipmentSet)), page);
      await expectCursorRefused((query) => list(query, setsPath(tenant, shipmentId)), page);
    });
  });

  describe('GET /shipments/{shipmentId}/sets/{setId}/items/{itemId}', () => {
    it('answers 200 with the item and its ETag', async () => {
      const { item, etag } = await createItem(stack, tenant, set);
      const response = await get(item.id);
      expect(response.status).toBe(200);
      expect(response.body).toEqual(item);
      expect(response.headers.get('etag')).toBe(etag);
    });

    it('accepts every id in upper case', async () => {
      const item = await create();
      const upper = `${setsPath(tenant, shipmentId.toUpperCase())}/${set.id.toUpperCase()}/items`;
      const response = await get(item.id.toUpperCase(), upper);
      expect(response.status).toBe(200);
      expect(response.body).toEqual(item);
    });
  });

  describe('PATCH /shipments/{shipmentId}/sets/{setId}/items/{itemId}', () => {
    it('changes the quantity and answers 200 with the new state and a new ETag', async () => {
      const { item, etag } = await createItem(stack, tenant, set);
      const response = await patch(item.id, { quantity: 7 });
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ ...item, quantity: 7, updatedAt: response.body.updatedAt });
      expect(response.body.updatedAt).toMatch(TIMESTAMP_MS);
      expect(Date.parse(response.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(item.updatedAt));
      expect(response.headers.get('etag')).toMatch(STRONG_ETAG);
      expect(response.headers.get('etag')).not.toBe(etag);
      const fetched = await get(item.id);
      expect(fetched.body).toEqual(response.body);
      expect(fetched.headers.get('etag')).toBe(response.headers.get('etag'));
    });

    it.each([
      ['sku', { sku: 'SKU-NEW' }],
      ['description', { description: 'Boxed' }],
      ['unit', { unit: 'kg' }],
      ['metadata', { metadata: { lot: 9 } }],
      ['several fields at once', { sku: 'S', description: '', quantity: 1000000, unit: 'box' }],
    ])('changes %s and leaves the other fields alone', async (_case, change) => {
      const item = await create({ description: 'Old', unit: 'pcs', metadata: { a: 'b' } });
      const response = await patch(item.id, change);
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ ...item, ...change, updatedAt: response.body.updatedAt });
      expect((await get(item.id)).body).toEqual(response.body);
    });

    it('sets description and unit to null', async () => {
      const item = await create({ description: 'Something', unit: 'pcs' });
      const response = await patch(item.id, { description: null, unit: null });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ description: null, unit: null });
      expect((await get(item.id)).body).toMatchObject({ description: null, unit: null });
    });

    it('replaces metadata as a whole; {} clears it', async () => {
      const item = await create({ metadata: { a: 'b', c: 1 } });
      expect((await patch(item.id, { metadata: { d: true } })).body.metadata).toEqual({ d: true });
      expect((await patch(item.id, { metadata: {} })).body.metadata).toEqual({});
      expect((await get(item.id)).body.metadata).toEqual({});
    });

    it('keeps version and updatedAt when the patch changes nothing', async () => {
      const { item, etag } = await createItem(stack, tenant, set, { body: { unit: 'pcs', metadata: { a: 1, b: 'x' } } });
      for (const body of [{}, { sku: item.sku }, { quantity: item.quantity, unit: 'pcs', description: null, metadata: { b: 'x', a: 1 } }]) {
        const response = await patch(item.id, body, { 'if-match': etag });
        expect(response.status, response.text).toBe(200);
        expect(response.body).toEqual(item);
        expect(response.headers.get('etag')).toBe(etag);
      }
    });

    it.each([
      ['a null sku', { sku: null }, 'sku', 'InvalidFormat'],
      ['an empty sku', { sku: '' }, 'sku', 'OutOfRange'],
      ['a sku of 101 characters', { sku: 's'.repeat(101) }, 'sku', 'OutOfRange'],
      ['a null quantity', { quantity: null }, 'quantity', 'InvalidFormat'],
      ['a fractional quantity', { quantity: 2.5 }, 'quantity', 'InvalidFormat'],
      ['a quantity of 0', { quantity: 0 }, 'quantity', 'OutOfRange'],
      ['a quantity of 1000001', { quantity: 1000001 }, 'quantity', 'OutOfRange'],
      ['a numeric description', { description: 1 }, 'description', 'InvalidFormat'],
      ['a description of 2001 characters', { description: 'd'.repeat(2001) }, 'description', 'OutOfRange'],
      ['an empty unit', { unit: '' }, 'unit', 'OutOfRange'],
      ['a unit of 21 characters', { unit: 'u'.repeat(21) }, 'unit', 'OutOfRange'],
      ['null metadata', { metadata: null }, 'metadata', 'InvalidFormat'],
      ['metadata with an array', { metadata: { a: [] } }, 'metadata', 'InvalidFormat'],
      ['metadata over 8 KiB', { metadata: metadataOf(1, 8193) }, 'metadata', 'OutOfRange'],
      ...FOREIGN_FIELD_CASES,
    ])('rejects %s with 400 InvalidParameter and changes nothing', async (_case, body, field, issue) => {
      const { item, etag } = await createItem(stack, tenant, set);
      expectInvalidParameter(await patch(item.id, body), field, issue);
      const after = await get(item.id);
      expect(after.body).toEqual(item);
      expect(after.headers.get('etag')).toBe(etag);
    });

    it('rejects a body that is not an object with 400 MalformedRequest', async () => {
      const item = await create();
      expectError(await patch(item.id, [{ sku: 'x' }]), 400, 'MalformedRequest');
    });

    it('honours If-Match: stale -> 412 and unchanged, current -> 200, * -> 200', async () => {
      const { item, etag } = await createItem(stack, tenant, set);
      await expectPatchHonoursIfMatch(
        (body, ifMatch) => patch(item.id, body, { 'if-match': ifMatch }),
        () => get(item.id),
        etag,
        [{ quantity: 2 }, { quantity: 3 }, { unit: 'kg' }, { quantity: 5 }],
      );
    });

    it.each(UNMATCHABLE_IF_MATCH)('fails If-Match %s with 412', async (ifMatch) => {
      const item = await create();
      expectError(await patch(item.id, { quantity: 9 }, { 'if-match': ifMatch }), 412, 'PreconditionFailed');
      expect((await get(item.id)).body.quantity).toBe(item.quantity);
    });
  });

  describe('DELETE /shipments/{shipmentId}/sets/{setId}/items/{itemId}', () => {
    it('answers 204 without a body; the item is gone, its set stays', async () => {
      const item = await create();
      const response = await del(item.id);
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      expectError(await get(item.id), 404, 'ItemNotExists');
      expectError(await del(item.id), 404, 'ItemNotExists');
      expectError(await patch(item.id, { quantity: 2 }), 404, 'ItemNotExists');
      expect((await list('?limit=100')).text).not.toContain(item.id);
      expect((await stack.request('GET', `${setsPath(tenant, shipmentId)}/${set.id}`, { token: tenant.token })).status).toBe(200);
    });

    it('honours If-Match: stale -> 412 and kept, current -> 204', async () => {
      const { item, etag } = await createItem(stack, tenant, set);
      await expectDeleteHonoursIfMatch(
        (ifMatch) => del(item.id, { 'if-match': ifMatch }),
        () => get(item.id),
        () => patch(item.id, { quantity: 2 }),
        etag,
      );
    });

    it('deletes with If-Match: *', async () => {
      const item = await create();
      expect((await del(item.id, { 'if-match': '*' })).status).toBe(204);
      expect((await get(item.id)).status).toBe(404);
    });

    it('goes with its set: after the set is deleted, its items answer SetNotExists', async () => {
      const doomed = await newSet();
      const item = await create({}, doomed);
      const setPath = `${setsPath(tenant, shipmentId)}/${doomed.id}`;
      expect((await stack.request('DELETE', setPath, { token: tenant.token })).status).toBe(204);
      expectError(await get(item.id, itemsPath(tenant, doomed)), 404, 'SetNotExists');
      expect((await oms.query('SELECT 1 FROM items WHERE id = $1', [item.id])).rows).toEqual([]);
    });
  });

  describeClosedShipmentWrites('closed shipments', () => ({
    stack: () => stack,
    token: () => tenant.token,
    newContent: async () => {
      const closing = await newShipment();
      const closingSet = await newSet(closing);
      const { item, etag } = await createItem(stack, tenant, closingSet);
      return { shipmentId: closing, path: itemsPath(tenant, closingSet), resource: item, etag };
    },
    createBody: () => itemBody(),
    change: { quantity: 99 },
    notFound: 'ItemNotExists',
  }));

  it('answers SetNotExists before ShipmentClosed for an item of an unknown set of a closed shipment', async () => {
    const closed = await newShipment();
    await closeShipment(oms, closed, 'Completed');
    const unknownSet = pathOf(closed, UNKNOWN_ID);
    expectError(await post(itemBody(), unknownSet), 404, 'SetNotExists');
    expectError(await patch(UNKNOWN_ID, { quantity: 2 }, undefined, unknownSet), 404, 'SetNotExists');
  });

  describe('items that are not there', () => {
    let secret: string;
    let sibling: ShipmentSet;
    let siblingItem: Item;
    let otherShipmentSet: ShipmentSet;
    let otherShipmentItem: Item;
    let otherAccountSet: ShipmentSet;
    let otherTenantSet: ShipmentSet;
    let otherTenantItem: Item;

    beforeAll(async () => {
      secret = `Secret ${Math.random()}`;
      sibling = await newSet();
      siblingItem = await create({ sku: secret }, sibling);
      otherShipmentSet = await newSet(await newShipment());
      otherShipmentItem = await create({ sku: secret }, otherShipmentSet);
      otherAccountSet = (await createSet(stack, tenant, await newShipment(1), { account: 1 })).set;
      await createItem(stack, tenant, otherAccountSet, { account: 1, body: { sku: secret } });
      const otherTenantShipment = (await createShipment(stack, otherTenant)).id;
      otherTenantSet = (await createSet(stack, otherTenant, otherTenantShipment)).set;
      otherTenantItem = (await createItem(stack, otherTenant, otherTenantSet, { body: { sku: secret } })).item;
    });

    /** Every route below one set path, with `itemId` for the routes of one item. */
    const everyRoute = (at: string, itemId: string) => [
      () => list('', at),
      () => post(itemBody(), at),
      () => get(itemId, at),
      () => patch(itemId, { quantity: 3 }, undefined, at),
      () => patch(itemId, { sku: 'Hijacked' }, { 'if-match': '*' }, at),
      () => del(itemId, undefined, at),
      () => del(itemId, { 'if-match': '"1"' }, at),
    ];
    const itemRoutes = (at: string, itemId: string) => everyRoute(at, itemId).slice(2);

    it('answers 404 ShipmentNotExists for an unknown shipment, whatever the set and item ids', async () => {
      await expectNotFound(everyRoute(pathOf(UNKNOWN_ID, set.id), UNKNOWN_ID), 'ShipmentNotExists', secret);
      await expectNotFound(everyRoute(pathOf(UNKNOWN_ID, 'not-a-uuid'), 'not-a-uuid'), 'ShipmentNotExists', secret);
    });

    it.each(NOT_UUIDS)('answers 404 ShipmentNotExists for the shipment id %s', async (id) => {
      await expectNotFound(everyRoute(pathOf(id, set.id), UNKNOWN_ID), 'ShipmentNotExists', secret);
    });

    it("answers 404 ShipmentNotExists for another account's or another tenant's shipment, even with their real ids", async () => {
      await expectNotFound(everyRoute(pathOf(otherAccountSet.shipmentId, otherAccountSet.id), UNKNOWN_ID), 'ShipmentNotExists', secret);
      await expectNotFound(everyRoute(pathOf(otherTenantSet.shipmentId, otherTenantSet.id), otherTenantItem.id), 'ShipmentNotExists', secret);
    });

    it('answers 404 SetNotExists for an unknown set, whatever the item id', async () => {
      await expectNotFound(everyRoute(pathOf(shipmentId, UNKNOWN_ID), UNKNOWN_ID), 'SetNotExists', secret);
      await expectNotFound(everyRoute(pathOf(shipmentId, UNKNOWN_ID), 'not-a-uuid'), 'SetNotExists', secret);
    });

    it.each(NOT_UUIDS)('answers 404 SetNotExists for the set id %s', async (id) => {
      await expectNotFound(everyRoute(pathOf(shipmentId, id), UNKNOWN_ID), 'SetNotExists', secret);
    });

    it('answers 404 SetNotExists for a set of another shipment of the same account, even with its real item', async () => {
      await expectNotFound(everyRoute(pathOf(shipmentId, otherShipmentSet.id), otherShipmentItem.id), 'SetNotExists', secret);
      const untouched = await get(otherShipmentItem.id, itemsPath(tenant, otherShipmentSet));
      expect(untouched.body).toEqual(otherShipmentItem);
    });

    it("answers 404 SetNotExists for a set of another account's or another tenant's shipment", async () => {
      await expectNotFound(everyRoute(pathOf(shipmentId, otherAccountSet.id), UNKNOWN_ID), 'SetNotExists', secret);
      await expectNotFound(everyRoute(pathOf(shipmentId, otherTenantSet.id), otherTenantItem.id), 'SetNotExists', secret);
      const untouched = await stack.request('GET', `${itemsPath(otherTenant, otherTenantSet)}/${otherTenantItem.id}`, {
        token: otherTenant.token,
      });
      expect(untouched.body).toEqual(otherTenantItem);
    });

    it('answers 404 ItemNotExists for an unknown item', async () => {
      await expectNotFound(itemRoutes(path, UNKNOWN_ID), 'ItemNotExists', secret);
    });

    it.each(NOT_UUIDS)('answers 404 ItemNotExists for the item id %s', async (id) => {
      await expectNotFound(itemRoutes(path, id), 'ItemNotExists', secret);
    });

    it('answers 404 ItemNotExists for an item of another set of the same shipment, and touches nothing', async () => {
      await expectNotFound(itemRoutes(path, siblingItem.id), 'ItemNotExists', secret);
      expect((await get(siblingItem.id, itemsPath(tenant, sibling))).body).toEqual(siblingItem);
    });

    it('answers 404 ItemNotExists for an item of a set of another shipment or tenant', async () => {
      await expectNotFound(itemRoutes(path, otherShipmentItem.id), 'ItemNotExists', secret);
      await expectNotFound(itemRoutes(path, otherTenantItem.id), 'ItemNotExists', secret);
    });

    it('validates the body of a PATCH before looking the ids up', async () => {
      expectInvalidParameter(await patch(UNKNOWN_ID, { quantity: 0 }, undefined, pathOf(UNKNOWN_ID, UNKNOWN_ID)), 'quantity', 'OutOfRange');
    });
  });

  describe('access', () => {
    it('answers 401 without a token', async () => {
      const item = await create();
      for (const response of [
        await stack.request('GET', path),
        await stack.request('POST', path, { body: itemBody() }),
        await stack.request('GET', `${path}/${item.id}`),
        await stack.request('PATCH', `${path}/${item.id}`, { body: { quantity: 2 } }),
        await stack.request('DELETE', `${path}/${item.id}`),
      ]) {
        expect(response.status).toBe(401);
        expect(response.body).toEqual({ error: { code: 'Unauthorized', message: expect.any(String) } });
      }
    });

    it("answers 400 AccountNotFound on another tenant's account, before looking at the shipment", async () => {
      const foreign = `/v1/accounts/${otherTenant.accountIds[0]}/shipments/${UNKNOWN_ID}/sets/${UNKNOWN_ID}/items`;
      expectInvalidParameter(await stack.request('GET', foreign, { token: tenant.token }), 'accountId', 'AccountNotFound');
      expectInvalidParameter(await stack.request('POST', foreign, { token: tenant.token, body: itemBody() }), 'accountId', 'AccountNotFound');
    });

    it('lets a Viewer read but not write (403 Forbidden)', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      const admin = await stack.identity.createApplication(viewer.tenantId, 'Writer', 'Admin', '*');
      const writer = { ...viewer, token: await issueToken(stack, viewer.tenantId, admin.applicationId, admin.applicationSecret) };
      const viewerSet = (await createSet(stack, writer, (await createShipment(stack, writer)).id)).set;
      const { item, path: itemPath } = await createItem(stack, writer, viewerSet);
      const at = itemsPath(viewer, viewerSet);

      expect((await stack.request('GET', at, { token: viewer.token })).body.items).toEqual([item]);
      expect((await stack.request('GET', itemPath, { token: viewer.token })).body).toEqual(item);
      expectError(await stack.request('POST', at, { token: viewer.token, body: itemBody() }), 403, 'Forbidden');
      expectError(await stack.request('PATCH', itemPath, { token: viewer.token, body: { quantity: 2 } }), 403, 'Forbidden');
      expectError(await stack.request('DELETE', itemPath, { token: viewer.token }), 403, 'Forbidden');
      expect((await stack.request('GET', itemPath, { token: viewer.token })).body).toEqual(item);
    });
  });
});
