import { randomUUID } from 'node:crypto';
import type { PointOfInterest } from '@tracking/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest, pointOfInterestBody } from '../factories/point-of-interest.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { eventually } from '../support/eventually.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS, UUID_V7 } from '../support/http-assertions.js';
import { metadataOf } from '../support/resource-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';

const FIELDS = ['id', 'name', 'kind', 'location', 'radiusMeters', 'dwellSeconds', 'address', 'metadata', 'createdAt', 'updatedAt'].sort();
const KINDS = ['Warehouse', 'Port', 'Airport', 'Customer', 'Supplier', 'Other'];
const STRONG_ETAG = /^"[^"]+"$/;
const UNKNOWN_ID = '0190a4a0-0000-7000-8000-000000000000';

/** `count` metadata keys whose JSON is exactly `bytes` long when `bytes` is given. */
describe('points of interest over HTTP', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let otherTenant: TestTenant;
  let oms: pg.Client;
  let path: string;

  beforeAll(async () => {
    stack = await TestStack.start();
    // Account 0 for most tests, 1 as "another account of the same tenant", 2 for paging and deletes.
    tenant = await createTenant(stack, { accounts: 3 });
    otherTenant = await createTenant(stack);
    path = `/v1/accounts/${tenant.accountIds[0]}/points-of-interest`;
    oms = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
    await oms.connect();
  });
  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
  });

  const post = (body: unknown, headers?: Record<string, string>) => stack.request('POST', path, { token: tenant.token, body, headers });
  const get = (id: string, at = path) => stack.request('GET', `${at}/${id}`, { token: tenant.token });
  const patch = (id: string, body: unknown, headers?: Record<string, string>) =>
    stack.request('PATCH', `${path}/${id}`, { token: tenant.token, body, headers });
  const del = (id: string, headers?: Record<string, string>, at = path) =>
    stack.request('DELETE', `${at}/${id}`, { token: tenant.token, headers });
  const create = async (body: Record<string, unknown> = {}) => (await createPointOfInterest(stack, tenant, { body })).pointOfInterest;

  describe('POST /points-of-interest', () => {
    it('answers 201 with the whole point of interest and its defaults, a Location and an ETag', async () => {
      const before = Date.now();
      const created = await post({ name: 'Rotterdam DC', kind: 'Warehouse', location: { lat: 51.9225, lng: 4.47917 } });
      const after = Date.now();

      expect(created.status, created.text).toBe(201);
      const poi = created.body;
      expect(Object.keys(poi).sort()).toEqual(FIELDS);
      expect(poi).toMatchObject({
        name: 'Rotterdam DC',
        kind: 'Warehouse',
        location: { lat: 51.9225, lng: 4.47917 },
        radiusMeters: 200,
        dwellSeconds: 120,
        address: null,
        metadata: {},
      });
      expect(Object.keys(poi.location).sort()).toEqual(['lat', 'lng']);
      expect(poi.id).toMatch(UUID_V7);
      expect(poi.createdAt).toMatch(TIMESTAMP_MS);
      expect(poi.updatedAt).toBe(poi.createdAt);
      expect(Date.parse(poi.createdAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(poi.createdAt)).toBeLessThanOrEqual(after + 1000);
      expect(created.headers.get('location')).toBe(`${path}/${poi.id}`);
      expect(created.headers.get('etag')).toMatch(STRONG_ETAG);

      const fetched = await stack.request('GET', `${path}/${poi.id}`, { token: tenant.token });
      expect(fetched.status).toBe(200);
      expect(fetched.body).toEqual(poi);
      expect(fetched.headers.get('etag')).toBe(created.headers.get('etag'));
    });

    it('stores every optional field as given', async () => {
      const body = {
        name: 'Schiphol Cargo',
        kind: 'Airport',
        location: { lat: -33.9249, lng: -18.4241 },
        radiusMeters: 1500,
        dwellSeconds: 600,
        address: 'Anchoragelaan 1, 1118 LE Schiphol — “Gate 3”',
        metadata: { dock: 'B4', gates: 12, ratio: 0.125, large: 12345678901234, bonded: true, open: false, note: 'Zoll ✓' },
      };
      const created = await post(body);
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject(body);
      expect((await get(created.body.id)).body).toEqual(created.body);
    });

    it.each(KINDS)('accepts the kind %s', async (kind) => {
      const created = await post(pointOfInterestBody({ kind }));
      expect(created.status, created.text).toBe(201);
      expect(created.body.kind).toBe(kind);
    });

    it.each([
      ['the smallest coordinates', { lat: -90, lng: -180 }],
      ['the largest coordinates', { lat: 90, lng: 180 }],
      ['zero', { lat: 0, lng: 0 }],
      ['many decimals', { lat: 12.345678901234, lng: -98.765432109876 }],
    ])('accepts a location with %s', async (_case, location) => {
      const created = await post(pointOfInterestBody({ location }));
      expect(created.status, created.text).toBe(201);
      expect(created.body.location).toEqual(location);
      expect((await get(created.body.id)).body.location).toEqual(location);
    });

    it.each([
      ['a name of 1 character', { name: 'x' }],
      ['a name of 200 characters', { name: 'n'.repeat(200) }],
      ['the smallest radius', { radiusMeters: 10 }],
      ['the largest radius', { radiusMeters: 100000 }],
      ['no dwell', { dwellSeconds: 0 }],
      ['the longest dwell', { dwellSeconds: 86400 }],
      ['an empty address', { address: '' }],
      ['an address of 2000 characters', { address: 'a'.repeat(2000) }],
      ['a null address', { address: null }],
      ['empty metadata', { metadata: {} }],
      ['metadata with 50 keys', { metadata: metadataOf(50) }],
      ['metadata of exactly 8 KiB', { metadata: metadataOf(3, 8192) }],
    ])('accepts %s', async (_case, overrides) => {
      const created = await post(pointOfInterestBody(overrides));
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject(overrides);
    });

    it.each([
      // name
      ['a missing name', { name: undefined }, 'name', 'Required'],
      ['a null name', { name: null }, 'name', 'InvalidFormat'],
      ['a numeric name', { name: 42 }, 'name', 'InvalidFormat'],
      ['an empty name', { name: '' }, 'name', 'OutOfRange'],
      ['a name of 201 characters', { name: 'n'.repeat(201) }, 'name', 'OutOfRange'],
      // kind
      ['a missing kind', { kind: undefined }, 'kind', 'Required'],
      ['a null kind', { kind: null }, 'kind', 'InvalidFormat'],
      ['an unknown kind', { kind: 'Lighthouse' }, 'kind', 'InvalidFormat'],
      ['a kind in the wrong case', { kind: 'warehouse' }, 'kind', 'InvalidFormat'],
      ['a numeric kind', { kind: 1 }, 'kind', 'InvalidFormat'],
      // location
      ['a missing location', { location: undefined }, 'location', 'Required'],
      ['a null location', { location: null }, 'location', 'InvalidFormat'],
      ['a string location', { location: '51.9,4.4' }, 'location', 'InvalidFormat'],
      ['an array location', { location: [51.9, 4.4] }, 'location', 'InvalidFormat'],
      ['a location without lat', { location: { lng: 4.4 } }, 'location.lat', 'Required'],
      ['a location without lng', { location: { lat: 51.9 } }, 'location.lng', 'Required'],
      ['an empty location', { location: {} }, 'location.lat', 'Required'],
      ['a null lat', { location: { lat: null, lng: 4.4 } }, 'location.lat', 'InvalidFormat'],
      ['a string lat', { location: { lat: '51.9', lng: 4.4 } }, 'location.lat', 'InvalidFormat'],
      ['a boolean lng', { location: { lat: 51.9, lng: true } }, 'location.lng', 'InvalidFormat'],
      ['a lat below -90', { location: { lat: -90.000001, lng: 0 } }, 'location.lat', 'OutOfRange'],
      ['a lat above 90', { location: { lat: 90.000001, lng: 0 } }, 'location.lat', 'OutOfRange'],
      ['a lng below -180', { location: { lat: 0, lng: -180.000001 } }, 'location.lng', 'OutOfRange'],
      ['a lng above 180', { location: { lat: 0, lng: 180.000001 } }, 'location.lng', 'OutOfRange'],
      ['an unknown location field', { location: { lat: 1, lng: 2, alt: 3 } }, 'location.alt', 'UnknownField'],
      // radiusMeters
      ['a null radius', { radiusMeters: null }, 'radiusMeters', 'InvalidFormat'],
      ['a string radius', { radiusMeters: '200' }, 'radiusMeters', 'InvalidFormat'],
      ['a fractional radius', { radiusMeters: 200.5 }, 'radiusMeters', 'InvalidFormat'],
      ['a radius of 9', { radiusMeters: 9 }, 'radiusMeters', 'OutOfRange'],
      ['a negative radius', { radiusMeters: -200 }, 'radiusMeters', 'OutOfRange'],
      ['a radius of 100001', { radiusMeters: 100001 }, 'radiusMeters', 'OutOfRange'],
      ['a null dwell', { dwellSeconds: null }, 'dwellSeconds', 'InvalidFormat'],
      ['a string dwell', { dwellSeconds: '120' }, 'dwellSeconds', 'InvalidFormat'],
      ['a fractional dwell', { dwellSeconds: 1.5 }, 'dwellSeconds', 'InvalidFormat'],
      ['a negative dwell', { dwellSeconds: -1 }, 'dwellSeconds', 'OutOfRange'],
      ['a dwell of 86401', { dwellSeconds: 86401 }, 'dwellSeconds', 'OutOfRange'],
      // address
      ['a numeric address', { address: 5 }, 'address', 'InvalidFormat'],
      ['an object address', { address: { street: 'x' } }, 'address', 'InvalidFormat'],
      ['an address of 2001 characters', { address: 'a'.repeat(2001) }, 'address', 'OutOfRange'],
      // metadata
      ['null metadata', { metadata: null }, 'metadata', 'InvalidFormat'],
      ['array metadata', { metadata: ['a'] }, 'metadata', 'InvalidFormat'],
      ['string metadata', { metadata: 'a=b' }, 'metadata', 'InvalidFormat'],
      ['a nested object in metadata', { metadata: { a: { b: 1 } } }, 'metadata', 'InvalidFormat'],
      ['an array in metadata', { metadata: { a: [1] } }, 'metadata', 'InvalidFormat'],
      ['a null in metadata', { metadata: { a: null } }, 'metadata', 'InvalidFormat'],
      ['metadata with 51 keys', { metadata: metadataOf(51) }, 'metadata', 'OutOfRange'],
      ['metadata of 8 KiB and one byte', { metadata: metadataOf(3, 8193) }, 'metadata', 'OutOfRange'],
      ['metadata over 8 KiB in bytes but not in characters', { metadata: { a: 'é'.repeat(4100) } }, 'metadata', 'OutOfRange'],
      // fields the client may not send
      ['an unknown field', { colour: 'red' }, 'colour', 'UnknownField'],
      ['id', { id: randomUUID() }, 'id', 'ReadOnly'],
      ['createdAt', { createdAt: '2025-01-01T00:00:00.000Z' }, 'createdAt', 'ReadOnly'],
      ['updatedAt', { updatedAt: '2025-01-01T00:00:00.000Z' }, 'updatedAt', 'ReadOnly'],
    ])('rejects %s with 400 InvalidParameter', async (_case, overrides, field, issue) => {
      expectInvalidParameter(await post(pointOfInterestBody(overrides)), field, issue);
    });

    it('creates nothing when it refuses a body', async () => {
      const fresh = await createTenant(stack);
      const freshPath = `/v1/accounts/${fresh.accountIds[0]}/points-of-interest`;
      const refused = await stack.request('POST', freshPath, { token: fresh.token, body: pointOfInterestBody({ radiusMeters: 5 }) });
      expect(refused.status).toBe(400);
      expect((await stack.request('GET', freshPath, { token: fresh.token })).body.items).toEqual([]);
    });

    it.each([
      ['lat', '{"name":"x","kind":"Port","location":{"lat":1e400,"lng":0}}', 'location.lat'],
      ['lng', '{"name":"x","kind":"Port","location":{"lat":0,"lng":-1e400}}', 'location.lng'],
      ['radiusMeters', '{"name":"x","kind":"Port","location":{"lat":0,"lng":0},"radiusMeters":1e400}', 'radiusMeters'],
      ['a metadata value', '{"name":"x","kind":"Port","location":{"lat":0,"lng":0},"metadata":{"a":1e400}}', 'metadata'],
    ])('rejects a number too large for a double (Infinity once parsed) in %s as InvalidFormat', async (_case, rawBody, field) => {
      const response = await stack.request('POST', path, { token: tenant.token, rawBody, headers: { 'content-type': 'application/json' } });
      expectInvalidParameter(response, field, 'InvalidFormat');
    });

    it.each([
      ['NaN', '{"name":"x","kind":"Port","location":{"lat":NaN,"lng":0}}'],
      ['Infinity', '{"name":"x","kind":"Port","location":{"lat":0,"lng":Infinity}}'],
      ['unparseable JSON', '{"name":"x",'],
    ])('rejects %s, which JSON cannot carry, with 400 MalformedRequest', async (_case, rawBody) => {
      const response = await stack.request('POST', path, { token: tenant.token, rawBody, headers: { 'content-type': 'application/json' } });
      expectError(response, 400, 'MalformedRequest');
    });

    it('rejects a body that is not an object with 400 MalformedRequest', async () => {
      expectError(await post([pointOfInterestBody()]), 400, 'MalformedRequest');
    });

    it('rejects a body that is not JSON with 415 UnsupportedMediaType', async () => {
      const response = await stack.request('POST', path, { token: tenant.token, rawBody: 'name=x', headers: { 'content-type': 'text/plain' } });
      expectError(response, 415, 'UnsupportedMediaType');
    });
  });

  describe('GET /points-of-interest', () => {
    let pagingPath: string;
    let created: PointOfInterest[];

    beforeAll(async () => {
      pagingPath = `/v1/accounts/${tenant.accountIds[2]}/points-of-interest`;
      created = [];
      for (let i = 0; i < 5; i++) created.push((await createPointOfInterest(stack, tenant, { account: 2 })).pointOfInterest);
    });

    const list = (query = '', at = pagingPath) => stack.request('GET', `${at}${query}`, { token: tenant.token });

    it('answers an empty page for an account without points of interest', async () => {
      const fresh = await createTenant(stack);
      const response = await stack.request('GET', `/v1/accounts/${fresh.accountIds[0]}/points-of-interest`, { token: fresh.token });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ items: [], metadata: { nextCursor: null } });
    });

    it('lists every point of interest of the account, oldest first, as GET shows them', async () => {
      const response = await list();
      expect(response.status).toBe(200);
      expect(Object.keys(response.body).sort()).toEqual(['items', 'metadata']);
      expect(response.body.items).toEqual(created);
      expect(response.body.metadata).toEqual({ nextCursor: null });
    });

    it('pages with limit and cursor, and counts with includeTotal', async () => {
      const first = await list('?limit=2&includeTotal=true');
      expect(first.status).toBe(200);
      expect(first.body.items.map((p: { id: string }) => p.id)).toEqual([created[0].id, created[1].id]);
      expect(first.body.metadata.total).toBe(5);
      expect(first.body.metadata.nextCursor).toEqual(expect.any(String));

      const second = await list(`?limit=2&cursor=${encodeURIComponent(first.body.metadata.nextCursor)}`);
      expect(second.body.items.map((p: { id: string }) => p.id)).toEqual([created[2].id, created[3].id]);
      expect(second.body.metadata).not.toHaveProperty('total');

      const third = await list(`?limit=2&includeTotal=false&cursor=${encodeURIComponent(second.body.metadata.nextCursor)}`);
      expect(third.body.items.map((p: { id: string }) => p.id)).toEqual([created[4].id]);
      expect(third.body.metadata).toEqual({ nextCursor: null });
    });

    it('ends with a null cursor when the last page is exactly full', async () => {
      const full = await list('?limit=5&includeTotal=true');
      expect(full.body.items).toHaveLength(5);
      expect(full.body.metadata).toEqual({ nextCursor: null, total: 5 });
    });

    it('shows points of interest created while paging on a later page', async () => {
      const fresh = await createTenant(stack);
      const at = `/v1/accounts/${fresh.accountIds[0]}/points-of-interest`;
      const read = (query: string) => stack.request('GET', `${at}${query}`, { token: fresh.token });
      const a = (await createPointOfInterest(stack, fresh)).pointOfInterest;
      const b = (await createPointOfInterest(stack, fresh)).pointOfInterest;
      const first = await read('?limit=1');
      expect(first.body.items.map((p: { id: string }) => p.id)).toEqual([a.id]);
      const c = (await createPointOfInterest(stack, fresh)).pointOfInterest;
      const second = await read(`?limit=1&cursor=${encodeURIComponent(first.body.metadata.nextCursor)}`);
      expect(second.body.items.map((p: { id: string }) => p.id)).toEqual([b.id]);
      const third = await read(`?limit=1&cursor=${encodeURIComponent(second.body.metadata.nextCursor)}`);
      expect(third.body.items.map((p: { id: string }) => p.id)).toEqual([c.id]);
      expect(third.body.metadata.nextCursor).toBeNull();
    });

    it.each([
      ['limit=0', 'limit', 'OutOfRange'],
      ['limit=101', 'limit', 'OutOfRange'],
      ['limit=-1', 'limit', 'OutOfRange'],
      ['limit=abc', 'limit', 'InvalidFormat'],
      ['limit=1.5', 'limit', 'InvalidFormat'],
      ['includeTotal=yes', 'includeTotal', 'InvalidFormat'],
      ['cursor=not-a-cursor', 'cursor', 'InvalidCursor'],
      ['kind=Port', 'kind', 'UnknownField'],
    ])('rejects ?%s with 400 InvalidParameter', async (query, field, issue) => {
      expectInvalidParameter(await list(`?${query}`), field, issue);
    });

    it('accepts limits of 1 and 100', async () => {
      expect((await list('?limit=1')).body.items).toHaveLength(1);
      expect((await list('?limit=100')).body.items).toHaveLength(5);
    });

    it('rejects a cursor of another account or another collection as InvalidCursor', async () => {
      const cursor = (await list('?limit=1')).body.metadata.nextCursor as string;
      await createPointOfInterest(stack, tenant, { account: 1 });
      await createPointOfInterest(stack, tenant, { account: 1 });
      const otherAccount = `/v1/accounts/${tenant.accountIds[1]}/points-of-interest`;
      expectInvalidParameter(await list(`?cursor=${encodeURIComponent(cursor)}`, otherAccount), 'cursor', 'InvalidCursor');

      await createShipment(stack, tenant, { account: 2 });
      await createShipment(stack, tenant, { account: 2 });
      const shipments = `/v1/accounts/${tenant.accountIds[2]}/shipments`;
      const shipmentCursor = (await list('?limit=1', shipments)).body.metadata.nextCursor as string;
      expect(shipmentCursor).toEqual(expect.any(String));
      expectInvalidParameter(await list(`?cursor=${encodeURIComponent(shipmentCursor)}`), 'cursor', 'InvalidCursor');
    });

    it("never lists another account's or another tenant's points of interest", async () => {
      const secret = `Other tenant ${Math.random()}`;
      await createPointOfInterest(stack, otherTenant, { body: { name: secret } });
      const response = await list('?limit=100');
      expect(response.body.items.map((p: { id: string }) => p.id)).toEqual(created.map((p) => p.id));
      expect(response.text).not.toContain(secret);
    });
  });

  describe('GET /points-of-interest/{poiId}', () => {
    it('answers 200 with the point of interest and its ETag', async () => {
      const { pointOfInterest, etag } = await createPointOfInterest(stack, tenant);
      const response = await get(pointOfInterest.id);
      expect(response.status).toBe(200);
      expect(response.body).toEqual(pointOfInterest);
      expect(response.headers.get('etag')).toBe(etag);
    });

    it('accepts the id in upper case', async () => {
      const poi = await create();
      const response = await get(poi.id.toUpperCase());
      expect(response.status).toBe(200);
      expect(response.body.id).toBe(poi.id);
    });
  });

  describe('PATCH /points-of-interest/{poiId}', () => {
    it('changes the name and answers 200 with the new state and a new ETag', async () => {
      const { pointOfInterest: poi, etag } = await createPointOfInterest(stack, tenant);
      const response = await patch(poi.id, { name: 'Renamed' });
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ ...poi, name: 'Renamed', updatedAt: response.body.updatedAt });
      expect(response.body.updatedAt).toMatch(TIMESTAMP_MS);
      expect(Date.parse(response.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(poi.updatedAt));
      expect(response.headers.get('etag')).toMatch(STRONG_ETAG);
      expect(response.headers.get('etag')).not.toBe(etag);
      const fetched = await get(poi.id);
      expect(fetched.body).toEqual(response.body);
      expect(fetched.headers.get('etag')).toBe(response.headers.get('etag'));
    });

    it.each([
      ['kind', { kind: 'Supplier' }],
      ['location', { location: { lat: -12.5, lng: 130.75 } }],
      ['radiusMeters', { radiusMeters: 10 }],
      ['dwellSeconds', { dwellSeconds: 0 }],
      ['address', { address: 'Europaweg 875, Maasvlakte' }],
      ['metadata', { metadata: { lane: 7 } }],
      ['several fields at once', { name: 'Port of Antwerp', kind: 'Port', radiusMeters: 100000, address: '' }],
    ])('changes %s and leaves the other fields alone', async (_case, change) => {
      const poi = await create({ address: 'Old address', metadata: { a: 'b', c: 1 } });
      const response = await patch(poi.id, change);
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ ...poi, ...change, updatedAt: response.body.updatedAt });
      expect((await get(poi.id)).body).toEqual(response.body);
    });

    it('sets the address to null', async () => {
      const poi = await create({ address: 'Somewhere' });
      const response = await patch(poi.id, { address: null });
      expect(response.status).toBe(200);
      expect(response.body.address).toBeNull();
      expect((await get(poi.id)).body.address).toBeNull();
    });

    it('replaces metadata as a whole; {} clears it', async () => {
      const poi = await create({ metadata: { a: 'b', c: 1 } });
      expect((await patch(poi.id, { metadata: { d: true } })).body.metadata).toEqual({ d: true });
      expect((await patch(poi.id, { metadata: {} })).body.metadata).toEqual({});
      expect((await get(poi.id)).body.metadata).toEqual({});
    });

    it('keeps version and updatedAt when the patch changes nothing', async () => {
      const { pointOfInterest: poi, etag } = await createPointOfInterest(stack, tenant, {
        body: { metadata: { a: 1, b: 'x' }, address: 'Here' },
      });
      for (const body of [{}, { name: poi.name }, { location: poi.location, metadata: { b: 'x', a: 1 }, address: 'Here' }]) {
        const response = await patch(poi.id, body, { 'if-match': etag });
        expect(response.status, response.text).toBe(200);
        expect(response.body).toEqual(poi);
        expect(response.headers.get('etag')).toBe(etag);
      }
    });

    it.each([
      ['a null name', { name: null }, 'name', 'InvalidFormat'],
      ['an empty name', { name: '' }, 'name', 'OutOfRange'],
      ['a name of 201 characters', { name: 'n'.repeat(201) }, 'name', 'OutOfRange'],
      ['a null kind', { kind: null }, 'kind', 'InvalidFormat'],
      ['an unknown kind', { kind: 'Moon' }, 'kind', 'InvalidFormat'],
      ['a null location', { location: null }, 'location', 'InvalidFormat'],
      ['half a location', { location: { lat: 1 } }, 'location.lng', 'Required'],
      ['a lat out of range', { location: { lat: 91, lng: 0 } }, 'location.lat', 'OutOfRange'],
      ['a lng out of range', { location: { lat: 0, lng: -181 } }, 'location.lng', 'OutOfRange'],
      ['an unknown location field', { location: { lat: 0, lng: 0, x: 1 } }, 'location.x', 'UnknownField'],
      ['a null radius', { radiusMeters: null }, 'radiusMeters', 'InvalidFormat'],
      ['a fractional radius', { radiusMeters: 20.5 }, 'radiusMeters', 'InvalidFormat'],
      ['a radius of 9', { radiusMeters: 9 }, 'radiusMeters', 'OutOfRange'],
      ['a radius of 100001', { radiusMeters: 100001 }, 'radiusMeters', 'OutOfRange'],
      ['a null dwell', { dwellSeconds: null }, 'dwellSeconds', 'InvalidFormat'],
      ['a string dwell', { dwellSeconds: '120' }, 'dwellSeconds', 'InvalidFormat'],
      ['a fractional dwell', { dwellSeconds: 1.5 }, 'dwellSeconds', 'InvalidFormat'],
      ['a negative dwell', { dwellSeconds: -1 }, 'dwellSeconds', 'OutOfRange'],
      ['a dwell of 86401', { dwellSeconds: 86401 }, 'dwellSeconds', 'OutOfRange'],
      ['a numeric address', { address: 1 }, 'address', 'InvalidFormat'],
      ['an address of 2001 characters', { address: 'a'.repeat(2001) }, 'address', 'OutOfRange'],
      ['null metadata', { metadata: null }, 'metadata', 'InvalidFormat'],
      ['metadata with a nested object', { metadata: { a: {} } }, 'metadata', 'InvalidFormat'],
      ['metadata with 51 keys', { metadata: metadataOf(51) }, 'metadata', 'OutOfRange'],
      ['metadata over 8 KiB', { metadata: metadataOf(1, 8193) }, 'metadata', 'OutOfRange'],
      ['an unknown field', { colour: 'red' }, 'colour', 'UnknownField'],
      ['id', { id: randomUUID() }, 'id', 'ReadOnly'],
      ['createdAt', { createdAt: '2025-01-01T00:00:00.000Z' }, 'createdAt', 'ReadOnly'],
      ['updatedAt', { updatedAt: '2025-01-01T00:00:00.000Z' }, 'updatedAt', 'ReadOnly'],
    ])('rejects %s with 400 InvalidParameter and changes nothing', async (_case, body, field, issue) => {
      const { pointOfInterest: poi, etag } = await createPointOfInterest(stack, tenant);
      expectInvalidParameter(await patch(poi.id, body), field, issue);
      const after = await get(poi.id);
      expect(after.body).toEqual(poi);
      expect(after.headers.get('etag')).toBe(etag);
    });

    it('rejects a body that is not an object with 400 MalformedRequest', async () => {
      const poi = await create();
      expectError(await patch(poi.id, [{ name: 'x' }]), 400, 'MalformedRequest');
    });

    it('honours If-Match: stale -> 412 and unchanged, current -> 200, * -> 200', async () => {
      const { pointOfInterest: poi, etag: first } = await createPointOfInterest(stack, tenant);
      const renamed = await patch(poi.id, { name: 'Second' }, { 'if-match': first });
      expect(renamed.status).toBe(200);
      const second = renamed.headers.get('etag') ?? '';
      expect(second).toMatch(STRONG_ETAG);
      expect(second).not.toBe(first);

      expectError(await patch(poi.id, { name: 'Stale' }, { 'if-match': first }), 412, 'PreconditionFailed');
      expect((await get(poi.id)).body.name).toBe('Second');

      const current = await patch(poi.id, { name: 'Third' }, { 'if-match': second });
      expect(current.status).toBe(200);
      const any = await patch(poi.id, { name: 'Fourth' }, { 'if-match': '*' });
      expect(any.status).toBe(200);
      expect(any.body.name).toBe('Fourth');
      expect(any.headers.get('etag')).not.toBe(current.headers.get('etag'));
    });

    it.each(['"999999"', 'W/"1"', 'garbage', '""'])('fails If-Match %s with 412', async (ifMatch) => {
      const poi = await create();
      expectError(await patch(poi.id, { name: 'x' }, { 'if-match': ifMatch }), 412, 'PreconditionFailed');
      expect((await get(poi.id)).body.name).toBe(poi.name);
    });
  });

  describe('DELETE /points-of-interest/{poiId}', () => {
    it('answers 204 without a body; the point of interest is gone', async () => {
      const poi = await create();
      const response = await del(poi.id);
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      expectError(await get(poi.id), 404, 'PointOfInterestNotExists');
      expectError(await del(poi.id), 404, 'PointOfInterestNotExists');
      expectError(await patch(poi.id, { name: 'x' }), 404, 'PointOfInterestNotExists');
      const listed = await stack.request('GET', `${path}?limit=100`, { token: tenant.token });
      expect(listed.text).not.toContain(poi.id);
    });

    it('honours If-Match: stale -> 412 and kept, current -> 204', async () => {
      const { pointOfInterest: poi, etag } = await createPointOfInterest(stack, tenant);
      await patch(poi.id, { name: 'Changed' });
      expectError(await del(poi.id, { 'if-match': etag }), 412, 'PreconditionFailed');
      expectError(await del(poi.id, { 'if-match': 'garbage' }), 412, 'PreconditionFailed');
      const current = await get(poi.id);
      expect(current.status).toBe(200);
      const currentEtag = current.headers.get('etag') ?? '';
      expect(currentEtag).toMatch(STRONG_ETAG);
      expect((await del(poi.id, { 'if-match': currentEtag })).status).toBe(204);
    });

    it('deletes with If-Match: *', async () => {
      const poi = await create();
      expect((await del(poi.id, { 'if-match': '*' })).status).toBe(204);
      expect((await get(poi.id)).status).toBe(404);
    });
  });

  describe('points of interest used by shipments', () => {
    let deletePath: string;

    beforeAll(() => {
      deletePath = `/v1/accounts/${tenant.accountIds[2]}/points-of-interest`;
    });

    /** A shipment written straight into the OMS database: shipment create does not take originId yet. */
    async function insertShipment(status: string, refs: { originId?: string; destinationId?: string }, client: pg.ClientBase = oms) {
      const id = randomUUID();
      await client.query(
        `INSERT INTO shipments (id, tenant_id, account_id, name, status, origin_id, destination_id, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, now(), now())`,
        [id, tenant.tenantId, tenant.accountIds[2], `Shipment ${id}`, status, refs.originId ?? null, refs.destinationId ?? null],
      );
      return id;
    }
    const shipmentRow = async (id: string) =>
      (await oms.query('SELECT status, origin_id, destination_id FROM shipments WHERE id = $1', [id])).rows[0];
    const createHere = async () => (await createPointOfInterest(stack, tenant, { account: 2 })).pointOfInterest;

    it.each([
      ['origin', 'Planned'],
      ['origin', 'InTransit'],
      ['origin', 'Delivered'],
      ['destination', 'Planned'],
      ['destination', 'InTransit'],
      ['destination', 'Delivered'],
    ])('answers 409 PointOfInterestInUse when it is the %s of a %s shipment, and keeps it', async (role, status) => {
      const poi = await createHere();
      const shipmentId = await insertShipment(status, role === 'origin' ? { originId: poi.id } : { destinationId: poi.id });
      expectError(await del(poi.id, undefined, deletePath), 409, 'PointOfInterestInUse');
      expectError(await del(poi.id, { 'if-match': '*' }, deletePath), 409, 'PointOfInterestInUse');
      expect((await get(poi.id, deletePath)).status).toBe(200);
      expect(await shipmentRow(shipmentId)).toMatchObject({ status, [`${role}_id`]: poi.id });
    });

    it('deletes it once the shipment is Completed; the shipment keeps a null origin', async () => {
      const poi = await createHere();
      const shipmentId = await insertShipment('InTransit', { originId: poi.id });
      expectError(await del(poi.id, undefined, deletePath), 409, 'PointOfInterestInUse');

      await oms.query(`UPDATE shipments SET status = 'Completed', completed_at = now() WHERE id = $1`, [shipmentId]);
      expect((await del(poi.id, undefined, deletePath)).status).toBe(204);
      expect(await shipmentRow(shipmentId)).toEqual({ status: 'Completed', origin_id: null, destination_id: null });
      expect((await get(poi.id, deletePath)).status).toBe(404);
    });

    it('deletes it when its only shipments are closed, clearing both references', async () => {
      const poi = await createHere();
      const other = await createHere();
      const cancelled = await insertShipment('Cancelled', { originId: poi.id, destinationId: other.id });
      const completed = await insertShipment('Completed', { originId: other.id, destinationId: poi.id });
      const shipmentsPath = `/v1/accounts/${tenant.accountIds[2]}/shipments`;
      const before = await stack.request('GET', `${shipmentsPath}/${cancelled}`, { token: tenant.token });
      expect((await del(poi.id, undefined, deletePath)).status).toBe(204);
      expect(await shipmentRow(cancelled)).toEqual({ status: 'Cancelled', origin_id: null, destination_id: other.id });
      expect(await shipmentRow(completed)).toEqual({ status: 'Completed', origin_id: other.id, destination_id: null });
      // The API shows the cleared references too: the foreign key's update rewrites the stored JSON.
      const shown = async (id: string) => (await stack.request('GET', `${shipmentsPath}/${id}`, { token: tenant.token })).body;
      expect(await shown(cancelled)).toMatchObject({ id: cancelled, originId: null, destinationId: other.id });
      expect(await shown(completed)).toMatchObject({ id: completed, originId: other.id, destinationId: null });
      const listed = await stack.request('GET', `${shipmentsPath}?status=Cancelled,Completed&limit=100`, { token: tenant.token });
      const byId = new Map((listed.body.items as { id: string }[]).map((item) => [item.id, item]));
      expect(byId.get(cancelled)).toMatchObject({ originId: null, destinationId: other.id });
      expect(byId.get(completed)).toMatchObject({ originId: other.id, destinationId: null });
      // A change clients must see: a new ETag (a cached one no longer matches), a new updatedAt, and a
      // shipment.updated each, with the shipment as it is now.
      const after = await stack.request('GET', `${shipmentsPath}/${cancelled}`, { token: tenant.token });
      expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
      expect(Date.parse(after.body.updatedAt)).toBeGreaterThan(Date.parse(before.body.updatedAt));
      const revalidated = await stack.request('GET', `${shipmentsPath}/${cancelled}`, {
        token: tenant.token,
        headers: { 'if-none-match': before.headers.get('etag')! },
      });
      expect(revalidated.status).toBe(200);
      const updates = await eventually(
        async () =>
          ((await stack.request('GET', `/v1/accounts/${tenant.accountIds[2]}/events?type=shipment.updated&limit=100`, { token: tenant.token })).body
            .items as { data: { id: string } }[]).filter((event) => [cancelled, completed].some((id) => id === event.data.id)),
        (found) => found.length >= 2,
        'the two shipment.updated events',
      );
      expect(updates.map((event) => event.data).sort((a, b) => a.id.localeCompare(b.id))).toEqual(
        [await shown(cancelled), await shown(completed)].sort((a, b) => a.id.localeCompare(b.id)),
      );
    });

    it('checks If-Match before use: a stale ETag is 412 even when in use', async () => {
      const { pointOfInterest: poi, etag } = await createPointOfInterest(stack, tenant, { account: 2 });
      await insertShipment('Planned', { originId: poi.id });
      await stack.request('PATCH', `${deletePath}/${poi.id}`, { token: tenant.token, body: { name: 'Changed' } });
      expectError(await del(poi.id, { 'if-match': etag }, deletePath), 412, 'PreconditionFailed');
    });

    it('waits for a shipment that is being created with it, and then refuses', async () => {
      const poi = await createHere();
      const writer = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
      await writer.connect();
      try {
        await writer.query('BEGIN');
        await insertShipment('Planned', { destinationId: poi.id }, writer);
        let settled = false;
        const deleting = del(poi.id, undefined, deletePath).finally(() => (settled = true));
        await new Promise((resolve) => setTimeout(resolve, 500));
        // The foreign key's lock on the point of interest holds the delete until the shipment commits.
        expect(settled).toBe(false);
        await writer.query('COMMIT');
        expectError(await deleting, 409, 'PointOfInterestInUse');
      } finally {
        await writer.end();
      }
    });

    it('refuses a shipment that refers to a deleted point of interest', async () => {
      const poi = await createHere();
      expect((await del(poi.id, undefined, deletePath)).status).toBe(204);
      await expect(insertShipment('Planned', { originId: poi.id })).rejects.toThrow(/shipments_origin_id_fkey/);
    });
  });

  describe('points of interest that are not there', () => {
    const notFound = (response: HttpResult, secret?: string) => {
      expectError(response, 404, 'PointOfInterestNotExists');
      if (secret !== undefined) expect(response.text).not.toContain(secret);
    };

    it('answers 404 PointOfInterestNotExists for an unknown id', async () => {
      notFound(await get(UNKNOWN_ID));
      notFound(await patch(UNKNOWN_ID, { name: 'x' }));
      notFound(await del(UNKNOWN_ID));
      notFound(await del(UNKNOWN_ID, { 'if-match': '"1"' }));
    });

    it.each(['not-a-uuid', '12345', `${UNKNOWN_ID.slice(0, -1)}g`, `${UNKNOWN_ID}0`])('answers 404 for the id %s', async (id) => {
      notFound(await get(id));
      notFound(await patch(id, { name: 'x' }));
      notFound(await del(id));
    });

    it("answers 404 for another account's point of interest of the same tenant, and never shows, changes or deletes it", async () => {
      const secret = `Other account ${Math.random()}`;
      const { pointOfInterest: other, path: otherPath } = await createPointOfInterest(stack, tenant, { account: 1, body: { name: secret } });
      notFound(await get(other.id), secret);
      notFound(await patch(other.id, { name: 'Hijacked' }), secret);
      notFound(await patch(other.id, { name: 'Hijacked' }, { 'if-match': '*' }), secret);
      notFound(await del(other.id), secret);
      notFound(await del(other.id, { 'if-match': '"1"' }), secret);
      const untouched = await stack.request('GET', otherPath, { token: tenant.token });
      expect(untouched.body).toEqual(other);
    });

    it("answers 404 for another tenant's point of interest, and never shows, changes or deletes it", async () => {
      const secret = `Other tenant ${Math.random()}`;
      const { pointOfInterest: other, path: otherPath } = await createPointOfInterest(stack, otherTenant, { body: { name: secret } });
      notFound(await get(other.id), secret);
      notFound(await patch(other.id, { name: 'Hijacked' }, { 'if-match': '*' }), secret);
      notFound(await del(other.id), secret);
      const untouched = await stack.request('GET', otherPath, { token: otherTenant.token });
      expect(untouched.body).toEqual(other);
    });

    it('validates the body of a PATCH before looking the id up', async () => {
      expectInvalidParameter(await patch(UNKNOWN_ID, { radiusMeters: 1 }), 'radiusMeters', 'OutOfRange');
    });
  });

  describe('access', () => {
    it('answers 401 without a token', async () => {
      const poi = await create();
      for (const response of [
        await stack.request('GET', path),
        await stack.request('POST', path, { body: pointOfInterestBody() }),
        await stack.request('GET', `${path}/${poi.id}`),
        await stack.request('PATCH', `${path}/${poi.id}`, { body: { name: 'x' } }),
        await stack.request('DELETE', `${path}/${poi.id}`),
      ]) {
        expect(response.status).toBe(401);
        expect(response.body).toEqual({ error: { code: 'Unauthorized', message: expect.any(String) } });
      }
    });

    it("answers 400 AccountNotFound on another tenant's account", async () => {
      const foreign = `/v1/accounts/${otherTenant.accountIds[0]}/points-of-interest`;
      expectInvalidParameter(await stack.request('GET', foreign, { token: tenant.token }), 'accountId', 'AccountNotFound');
      expectInvalidParameter(
        await stack.request('POST', foreign, { token: tenant.token, body: pointOfInterestBody() }),
        'accountId',
        'AccountNotFound',
      );
    });

    it('lets a Viewer read but not write (403 Forbidden)', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      const admin = await stack.identity.createApplication(viewer.tenantId, 'Writer', 'Admin', '*');
      const adminToken = await issueToken(stack, viewer.tenantId, admin.applicationId, admin.applicationSecret);
      const { pointOfInterest: poi, path: poiPath } = await createPointOfInterest(stack, { ...viewer, token: adminToken });
      const at = `/v1/accounts/${viewer.accountIds[0]}/points-of-interest`;

      expect((await stack.request('GET', at, { token: viewer.token })).body.items).toEqual([poi]);
      expect((await stack.request('GET', poiPath, { token: viewer.token })).body).toEqual(poi);
      expectError(await stack.request('POST', at, { token: viewer.token, body: pointOfInterestBody() }), 403, 'Forbidden');
      expectError(await stack.request('PATCH', poiPath, { token: viewer.token, body: { name: 'x' } }), 403, 'Forbidden');
      expectError(await stack.request('DELETE', poiPath, { token: viewer.token }), 403, 'Forbidden');
      expect((await stack.request('GET', poiPath, { token: viewer.token })).body).toEqual(poi);
    });
  });
});
