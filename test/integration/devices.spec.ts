import { randomUUID } from 'node:crypto';
import type { Device } from '@tracking/contracts';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompleteDevices1763800004000 } from '../../apps/dms/src/migrations/1763800004000-complete-devices.js';
import { dmsMigrations } from '../../apps/dms/src/migrations/index.js';
import { assignDeviceInDatabase, createDevice, deviceBody, devicesPath, uniqueSerialNumber } from '../factories/device.factory.js';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS, UUID_V7 } from '../support/http-assertions.js';
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
import { type HttpResult, TestStack } from '../support/stack.js';

const FIELDS = [
  'id',
  'serialNumber',
  'model',
  'status',
  'shipmentId',
  'setId',
  'firmwareVersion',
  'batteryLevel',
  'lastSeenAt',
  'lastLocation',
  'metadata',
  'createdAt',
  'updatedAt',
  'retiredAt',
].sort();

/** Fields only the API sets on a device, besides those of FOREIGN_FIELD_CASES. */
const DEVICE_READ_ONLY_CASES: [string, Record<string, unknown>, string, string][] = [
  ['status', { status: 'Available' }, 'status', 'ReadOnly'],
  ['retiredAt', { retiredAt: null }, 'retiredAt', 'ReadOnly'],
  ['a null shipmentId', { shipmentId: null }, 'shipmentId', 'ReadOnly'],
];

/** Rules of the fields that POST and PATCH share, with the `details.field` and `details.issue` of the 400. */
const SHARED_FIELD_CASES: [string, Record<string, unknown>, string, string][] = [
  ['a null model', { model: null }, 'model', 'InvalidFormat'],
  ['a numeric model', { model: 7 }, 'model', 'InvalidFormat'],
  ['an empty model', { model: '' }, 'model', 'OutOfRange'],
  ['a model of 101 characters', { model: 'm'.repeat(101) }, 'model', 'OutOfRange'],
  ['a numeric firmwareVersion', { firmwareVersion: 4.2 }, 'firmwareVersion', 'InvalidFormat'],
  ['an empty firmwareVersion', { firmwareVersion: '' }, 'firmwareVersion', 'OutOfRange'],
  ['a firmwareVersion of 51 characters', { firmwareVersion: 'f'.repeat(51) }, 'firmwareVersion', 'OutOfRange'],
  ['a string batteryLevel', { batteryLevel: '50' }, 'batteryLevel', 'InvalidFormat'],
  ['a boolean batteryLevel', { batteryLevel: true }, 'batteryLevel', 'InvalidFormat'],
  ['a batteryLevel below 0', { batteryLevel: -0.1 }, 'batteryLevel', 'OutOfRange'],
  ['a batteryLevel above 100', { batteryLevel: 100.1 }, 'batteryLevel', 'OutOfRange'],
  ['a numeric lastSeenAt', { lastSeenAt: 1732263000000 }, 'lastSeenAt', 'InvalidFormat'],
  ['a lastSeenAt without a time zone', { lastSeenAt: '2025-11-22T08:30:00' }, 'lastSeenAt', 'InvalidFormat'],
  ['a lastSeenAt that is only a date', { lastSeenAt: '2025-11-22' }, 'lastSeenAt', 'InvalidFormat'],
  ['an impossible lastSeenAt', { lastSeenAt: '2025-02-30T08:30:00Z' }, 'lastSeenAt', 'InvalidFormat'],
  ['a lastSeenAt before the year 1', { lastSeenAt: '0001-01-01T00:00:00+01:00' }, 'lastSeenAt', 'OutOfRange'],
  ['a string lastLocation', { lastLocation: '51.9,4.4' }, 'lastLocation', 'InvalidFormat'],
  ['an array lastLocation', { lastLocation: [51.9, 4.4] }, 'lastLocation', 'InvalidFormat'],
  ['a lastLocation without lng', { lastLocation: { lat: 1 } }, 'lastLocation.lng', 'Required'],
  ['a string lat', { lastLocation: { lat: '1', lng: 2 } }, 'lastLocation.lat', 'InvalidFormat'],
  ['a lat above 90', { lastLocation: { lat: 90.000001, lng: 0 } }, 'lastLocation.lat', 'OutOfRange'],
  ['a lat below -90', { lastLocation: { lat: -90.000001, lng: 0 } }, 'lastLocation.lat', 'OutOfRange'],
  ['a lng above 180', { lastLocation: { lat: 0, lng: 180.000001 } }, 'lastLocation.lng', 'OutOfRange'],
  ['a lng below -180', { lastLocation: { lat: 0, lng: -180.000001 } }, 'lastLocation.lng', 'OutOfRange'],
  ['an unknown lastLocation field', { lastLocation: { lat: 0, lng: 0, alt: 3 } }, 'lastLocation.alt', 'UnknownField'],
  ...BAD_METADATA_CASES,
  ...FOREIGN_FIELD_CASES,
  ...DEVICE_READ_ONLY_CASES,
];

describe('devices over HTTP', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let otherTenant: TestTenant;
  let dms: pg.Client;
  let path: string;

  beforeAll(async () => {
    stack = await TestStack.start();
    // Account 0 for most tests, 1 as "another account of the same tenant".
    tenant = await createTenant(stack, { accounts: 2 });
    otherTenant = await createTenant(stack);
    path = devicesPath(tenant);
    dms = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await dms.connect();
  });
  afterAll(async () => {
    await dms?.end();
    await stack?.stop();
  });

  const post = (body: unknown, at = path, token = tenant.token) => stack.request('POST', at, { token, body });
  const get = (id: string, at = path) => stack.request('GET', `${at}/${id}`, { token: tenant.token });
  const list = (query = '', at = path) => stack.request('GET', `${at}${query}`, { token: tenant.token });
  const patch = (id: string, body: unknown, headers?: Record<string, string>, at = path) =>
    stack.request('PATCH', `${at}/${id}`, { token: tenant.token, body, headers });
  const del = (id: string, headers?: Record<string, string>, at = path) =>
    stack.request('DELETE', `${at}/${id}`, { token: tenant.token, headers });
  const retire = (id: string, headers?: Record<string, string>, at = path) =>
    stack.request('POST', `${at}/${id}/retire`, { token: tenant.token, headers });
  const create = async (body: Record<string, unknown> = {}, account = 0) => (await createDevice(stack, tenant, { account, body })).device;
  /** A device of account 0 in the status Assigned, linked to a (made-up) shipment and set. */
  const createAssigned = async (shipmentId = randomUUID()) => {
    const device = await create();
    await assignDeviceInDatabase(stack, device.id, shipmentId, randomUUID());
    return (await get(device.id)).body as Device;
  };
  const createRetired = async () => {
    const device = await create();
    expect((await retire(device.id)).status).toBe(204);
    return (await get(device.id)).body as Device;
  };
  const ids = (response: HttpResult) => response.body.devices.map((device: Device) => device.id);

  describe('POST /devices', () => {
    it('answers 201 with the whole device, Available and unassigned, a Location and an ETag', async () => {
      const before = Date.now();
      const created = await post({ serialNumber: 'TRK-0001', model: 'TempTrack T4' });
      const after = Date.now();

      expect(created.status, created.text).toBe(201);
      const device = created.body;
      expect(Object.keys(device).sort()).toEqual(FIELDS);
      expect(device).toMatchObject({
        serialNumber: 'TRK-0001',
        model: 'TempTrack T4',
        status: 'Available',
        shipmentId: null,
        setId: null,
        firmwareVersion: null,
        batteryLevel: null,
        lastSeenAt: null,
        lastLocation: null,
        metadata: {},
        retiredAt: null,
      });
      expect(device.id).toMatch(UUID_V7);
      expect(device.createdAt).toMatch(TIMESTAMP_MS);
      expect(device.updatedAt).toBe(device.createdAt);
      expect(Date.parse(device.createdAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(device.createdAt)).toBeLessThanOrEqual(after + 1000);
      expect(created.headers.get('location')).toBe(`${path}/${device.id}`);
      expect(created.headers.get('etag')).toMatch(STRONG_ETAG);

      const fetched = await get(device.id);
      expect(fetched.status).toBe(200);
      expect(fetched.body).toEqual(device);
      expect(fetched.headers.get('etag')).toBe(created.headers.get('etag'));
    });

    it('stores every optional field; lastSeenAt is answered in UTC with milliseconds', async () => {
      const body = deviceBody({
        firmwareVersion: '4.2.1-rc.1',
        batteryLevel: 87.5,
        lastSeenAt: '2025-11-22T09:30:00.1234+01:00',
        lastLocation: { lat: -33.9249, lng: 18.4241 },
        metadata: { customer: 'ACME', probes: 2, calibrated: true },
      });
      const created = await post(body);
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject({ ...body, lastSeenAt: '2025-11-22T08:30:00.123Z' });
      expect((await get(created.body.id)).body).toEqual(created.body);
    });

    it('shows any text, number and metadata the same in the list as in GET and in the answer to the create', async () => {
      // The list's JSON is assembled from PostgreSQL's output, GET's by JSON.stringify: both must agree.
      const anyText = (maxLength: number) => fc.string({ unit: 'binary', minLength: 1, maxLength });
      // Metadata values are strings, finite numbers and booleans (docs/api.md, "Input rules").
      const metadataValue = fc.oneof(anyText(20), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean());
      let accepted = 0;
      await fc.assert(
        fc.asyncProperty(
          anyText(30),
          fc.option(anyText(30)),
          fc.option(fc.double({ min: 0, max: 100, noNaN: true })),
          fc.option(fc.record({ lat: fc.double({ min: -90, max: 90, noNaN: true }), lng: fc.double({ min: -180, max: 180, noNaN: true }) })),
          fc.dictionary(anyText(10), metadataValue, { maxKeys: 4 }),
          async (model, firmwareVersion, batteryLevel, lastLocation, metadata) => {
            const created = await post(deviceBody({ model, firmwareVersion, batteryLevel, lastLocation, metadata }));
            // Some text is refused (a NUL, for example); what is accepted must read back the same everywhere.
            expect([201, 400], created.text).toContain(created.status);
            if (created.status !== 201) return;
            accepted++;
            expect((await get(created.body.id)).body).toEqual(created.body);
            const listed = await list(`?serialNumber=${encodeURIComponent(created.body.serialNumber)}`);
            expect(listed.body.devices).toEqual([created.body]);
          },
        ),
        { numRuns: 40, seed: 20261123 },
      );
      // Not vacuous: most are accepted and compared.
      expect(accepted).toBeGreaterThanOrEqual(30);
    });

    it.each([
      ['a serialNumber of 100 characters', { serialNumber: uniqueSerialNumber().padEnd(100, 'x') }],
      ['a serialNumber with inner spaces and non-ASCII', { serialNumber: `${uniqueSerialNumber()} Zoll ✓` }],
      ['a model of 1 character', { model: 'M' }],
      ['a model of 100 characters', { model: 'm'.repeat(100) }],
      ['a firmwareVersion of 1 character', { firmwareVersion: '4' }],
      ['a firmwareVersion of 50 characters', { firmwareVersion: 'f'.repeat(50) }],
      ['a batteryLevel of 0', { batteryLevel: 0 }],
      ['a batteryLevel of 100', { batteryLevel: 100 }],
      ['the smallest coordinates', { lastLocation: { lat: -90, lng: -180 } }],
      ['the largest coordinates', { lastLocation: { lat: 90, lng: 180 } }],
      ['a lastSeenAt in UTC', { lastSeenAt: '2025-11-22T08:30:00.000Z' }],
      ['null for every nullable field', { firmwareVersion: null, batteryLevel: null, lastSeenAt: null, lastLocation: null }],
      ['metadata with 50 keys', { metadata: metadataOf(50) }],
      ['metadata of exactly 8 KiB', { metadata: metadataOf(3, 8192) }],
    ])('accepts %s', async (_case, overrides) => {
      const body = deviceBody(overrides);
      const created = await post(body);
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject(body);
    });

    it('accepts a serialNumber of 1 character', async () => {
      const fresh = await createTenant(stack);
      const created = await post(deviceBody({ serialNumber: 'X' }), devicesPath(fresh), fresh.token);
      expect(created.status, created.text).toBe(201);
      expect(created.body.serialNumber).toBe('X');
    });

    it.each([
      ['a missing serialNumber', { serialNumber: undefined }, 'serialNumber', 'Required'],
      ['a null serialNumber', { serialNumber: null }, 'serialNumber', 'InvalidFormat'],
      ['a numeric serialNumber', { serialNumber: 12345 }, 'serialNumber', 'InvalidFormat'],
      ['an empty serialNumber', { serialNumber: '' }, 'serialNumber', 'OutOfRange'],
      ['a serialNumber of 101 characters', { serialNumber: 's'.repeat(101) }, 'serialNumber', 'OutOfRange'],
      ['a serialNumber with a leading space', { serialNumber: ' SN-1' }, 'serialNumber', 'InvalidFormat'],
      ['a serialNumber with a trailing space', { serialNumber: 'SN-1 ' }, 'serialNumber', 'InvalidFormat'],
      ['a serialNumber with a trailing tab', { serialNumber: 'SN-1\t' }, 'serialNumber', 'InvalidFormat'],
      ['a serialNumber of white space only', { serialNumber: '   ' }, 'serialNumber', 'InvalidFormat'],
      ['a missing model', { model: undefined }, 'model', 'Required'],
      ...SHARED_FIELD_CASES,
    ])('rejects %s with 400 InvalidParameter', async (_case, overrides, field, issue) => {
      expectInvalidParameter(await post(deviceBody(overrides)), field, issue);
    });

    it('creates nothing when it refuses a body', async () => {
      const fresh = await createTenant(stack);
      const at = devicesPath(fresh);
      expect((await post(deviceBody({ batteryLevel: 101 }), at, fresh.token)).status).toBe(400);
      expect((await stack.request('GET', at, { token: fresh.token })).body.devices).toEqual([]);
    });

    it('rejects a number too large for a double in batteryLevel as InvalidFormat', async () => {
      const rawBody = `{"serialNumber":"${uniqueSerialNumber()}","model":"M","batteryLevel":1e400}`;
      const response = await stack.request('POST', path, { token: tenant.token, rawBody, headers: { 'content-type': 'application/json' } });
      expectInvalidParameter(response, 'batteryLevel', 'InvalidFormat');
    });

    it('rejects a body that is not an object with 400 MalformedRequest, and one that is not JSON with 415', async () => {
      expectError(await post([deviceBody()]), 400, 'MalformedRequest');
      const raw = await stack.request('POST', path, { token: tenant.token, rawBody: 'serialNumber=x', headers: { 'content-type': 'text/plain' } });
      expectError(raw, 415, 'UnsupportedMediaType');
    });
  });

  describe('serial numbers are unique per tenant', () => {
    it('answers 409 DuplicateSerialNumber in the same account and in another account of the tenant', async () => {
      const serialNumber = uniqueSerialNumber();
      const first = await create({ serialNumber });
      expectError(await post(deviceBody({ serialNumber })), 409, 'DuplicateSerialNumber');
      expectError(await post(deviceBody({ serialNumber }), devicesPath(tenant, 1)), 409, 'DuplicateSerialNumber');
      expect((await list(`?serialNumber=${serialNumber}`)).body.devices).toEqual([first]);
      expect((await list(`?serialNumber=${serialNumber}`, devicesPath(tenant, 1))).body.devices).toEqual([]);
    });

    it('allows the same serial number in another tenant, and compares exactly (case-sensitive)', async () => {
      const serialNumber = uniqueSerialNumber();
      await create({ serialNumber });
      const elsewhere = await post(deviceBody({ serialNumber }), devicesPath(otherTenant), otherTenant.token);
      expect(elsewhere.status, elsewhere.text).toBe(201);
      const otherCase = await post(deviceBody({ serialNumber: serialNumber.toLowerCase() }));
      expect(otherCase.status, otherCase.text).toBe(201);
    });

    it('keeps the serial number of a retired device taken, and frees that of a deleted one', async () => {
      const retired = await createRetired();
      expectError(await post(deviceBody({ serialNumber: retired.serialNumber })), 409, 'DuplicateSerialNumber');
      const deleted = await create();
      expect((await del(deleted.id)).status).toBe(204);
      const again = await post(deviceBody({ serialNumber: deleted.serialNumber }), devicesPath(tenant, 1));
      expect(again.status, again.text).toBe(201);
    });

    it.each([
      ['one account', [0, 0]],
      ['two accounts of the tenant', [0, 1]],
    ])('registers exactly one of two concurrent registrations of one serial number in %s', async (_case, accounts) => {
      for (let round = 0; round < 5; round++) {
        const serialNumber = uniqueSerialNumber();
        const answers = await Promise.all(accounts.map((account) => post(deviceBody({ serialNumber, model: `M${account}` }), devicesPath(tenant, account))));
        expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409]);
        expectError(answers.find((answer) => answer.status === 409)!, 409, 'DuplicateSerialNumber');
        const { rows } = await dms.query('SELECT id FROM devices WHERE tenant_id = $1 AND serial_number = $2', [tenant.tenantId, serialNumber]);
        expect(rows.map((row) => row.id)).toEqual([answers.find((answer) => answer.status === 201)!.body.id]);
      }
    });
  });

  describePaging(
    'GET /devices',
    'model',
    () => ({
      newCollection: async () => {
        const { accountId } = await stack.identity.createAccount(tenant.tenantId, 'Paging');
        return `/v1/accounts/${accountId}/devices`;
      },
      create: async (at) => (await post(deviceBody(), at)).body,
      list: (at, query = '') => list(query, at),
    }),
    'devices',
  );

  describe('GET /devices: filters', () => {
    let at: string;
    let available: Device;
    let assigned: Device;
    let retired: Device;
    let sibling: Device;
    const shipmentId = randomUUID();

    beforeAll(async () => {
      const { accountId } = await stack.identity.createAccount(tenant.tenantId, 'Filters');
      at = `/v1/accounts/${accountId}/devices`;
      const here = async () => (await post(deviceBody(), at)).body as Device;
      available = await here();
      assigned = await here();
      await assignDeviceInDatabase(stack, assigned.id, shipmentId, randomUUID());
      assigned = (await get(assigned.id, at)).body;
      retired = await here();
      expect((await retire(retired.id, undefined, at)).status).toBe(204);
      retired = (await get(retired.id, at)).body;
      sibling = await here();
      await assignDeviceInDatabase(stack, sibling.id, shipmentId, randomUUID());
      sibling = (await get(sibling.id, at)).body;
    });

    const filtered = (query: string) => list(query, at);

    it.each([
      ['status=Available', () => [available]],
      ['status=Assigned', () => [assigned, sibling]],
      ['status=Retired', () => [retired]],
      ['status=Retired,Available', () => [available, retired]],
      ['status=Available,Assigned,Retired', () => [available, assigned, retired, sibling]],
      ['status=Assigned,Assigned', () => [assigned, sibling]],
    ])('filters by %s', async (query, expected) => {
      const response = await filtered(`?${query}`);
      expect(response.status, response.text).toBe(200);
      expect(response.body.devices).toEqual(expected());
    });

    it('filters by exact serialNumber, case-sensitively', async () => {
      expect((await filtered(`?serialNumber=${encodeURIComponent(retired.serialNumber)}`)).body.devices).toEqual([retired]);
      expect((await filtered(`?serialNumber=${encodeURIComponent(retired.serialNumber.toLowerCase())}`)).body.devices).toEqual([]);
      expect((await filtered(`?serialNumber=${encodeURIComponent(retired.serialNumber.slice(0, -1))}`)).body.devices).toEqual([]);
    });

    it('filters by shipmentId, in any case', async () => {
      expect((await filtered(`?shipmentId=${shipmentId}`)).body.devices).toEqual([assigned, sibling]);
      expect((await filtered(`?shipmentId=${shipmentId.toUpperCase()}`)).body.devices).toEqual([assigned, sibling]);
      expect((await filtered(`?shipmentId=${UNKNOWN_ID}`)).body.devices).toEqual([]);
    });

    it('combines filters with AND, and counts what matches', async () => {
      const response = await filtered(`?status=Assigned&shipmentId=${shipmentId}&serialNumber=${encodeURIComponent(sibling.serialNumber)}&includeTotal=true`);
      expect(response.body).toEqual({ devices: [sibling], metadata: { nextCursor: null, total: 1 } });
      expect((await filtered(`?status=Available&shipmentId=${shipmentId}`)).body.devices).toEqual([]);
    });

    it('pages through a filtered list', async () => {
      const first = await filtered('?status=Available,Assigned&limit=2');
      expect(ids(first)).toEqual([available.id, assigned.id]);
      const second = await filtered(`?status=Available,Assigned&limit=2&cursor=${encodeURIComponent(first.body.metadata.nextCursor)}`);
      expect(ids(second)).toEqual([sibling.id]);
      expect(second.body.metadata.nextCursor).toBeNull();
    });

    it('binds the cursor to the filters: another filter is InvalidCursor, another order of the status list is not', async () => {
      const withStatus = (query = '') => filtered(`${query || '?'}&status=Available,Assigned`);
      await expectCursorRefused(withStatus, (query = '') => filtered(query));
      await expectCursorRefused(withStatus, (query = '') => filtered(`${query}&status=Assigned`));
      await expectCursorRefused(withStatus, (query = '') => filtered(`${query}&status=Available,Assigned&shipmentId=${shipmentId}`));
      await expectCursorRefused((query = '') => filtered(`${query}&shipmentId=${shipmentId}`), (query = '') => filtered(`${query}&shipmentId=${UNKNOWN_ID}`));
      await expectCursorRefused((query = '') => filtered(query), (query = '') => list(query, path));
      const first = await withStatus('?limit=1');
      const reordered = await filtered(`?limit=1&status=Assigned,Available&cursor=${encodeURIComponent(first.body.metadata.nextCursor)}`);
      expect(ids(reordered)).toEqual([assigned.id]);
    });

    it("lists only the account's devices", async () => {
      const mine = await create();
      const theirs = await create({}, 1);
      expect(ids(await list('?limit=100'))).toContain(mine.id);
      expect(ids(await list('?limit=100'))).not.toContain(theirs.id);
      expect(ids(await filtered('?limit=100'))).toEqual([available.id, assigned.id, retired.id, sibling.id]);
    });

    it.each([
      ['status=available', 'status', 'InvalidFormat'],
      ['status=Lost', 'status', 'InvalidFormat'],
      ['status=', 'status', 'InvalidFormat'],
      ['status=Available,', 'status', 'InvalidFormat'],
      ['status=Available&status=Retired', 'status', 'InvalidFormat'],
      ['serialNumber=', 'serialNumber', 'OutOfRange'],
      [`serialNumber=${'s'.repeat(101)}`, 'serialNumber', 'OutOfRange'],
      ['shipmentId=not-a-uuid', 'shipmentId', 'InvalidFormat'],
      [`shipmentId=${UNKNOWN_ID}0`, 'shipmentId', 'InvalidFormat'],
      ['shipmentId=', 'shipmentId', 'InvalidFormat'],
      ['setId=x', 'setId', 'UnknownField'],
    ])('rejects ?%s with 400 InvalidParameter', async (query, field, issue) => {
      expectInvalidParameter(await filtered(`?${query}`), field, issue);
    });
  });

  describe('GET /devices/{deviceId}', () => {
    it('answers 200 with the device and its ETag, also for an id in upper case', async () => {
      const { device, etag } = await createDevice(stack, tenant);
      for (const id of [device.id, device.id.toUpperCase()]) {
        const response = await get(id);
        expect(response.status).toBe(200);
        expect(response.body).toEqual(device);
        expect(response.headers.get('etag')).toBe(etag);
      }
    });

    it('shows an assigned device with its shipment and set', async () => {
      const shipmentId = randomUUID();
      const device = await createAssigned(shipmentId);
      expect(device).toMatchObject({ status: 'Assigned', shipmentId, setId: expect.any(String), retiredAt: null });
    });
  });

  describe('PATCH /devices/{deviceId}', () => {
    it('changes the given fields, answers the device with a new ETag, and keeps the others', async () => {
      const { device, etag } = await createDevice(stack, tenant, { body: { firmwareVersion: '1.0', metadata: { a: 1, b: 2 } } });
      const change = {
        model: 'TempTrack T5',
        batteryLevel: 42,
        lastSeenAt: '2025-11-22T10:00:00-02:30',
        lastLocation: { lat: 52.37, lng: 4.89 },
        metadata: { c: 'x' },
      };
      const response = await patch(device.id, change);
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({
        ...device,
        ...change,
        lastSeenAt: '2025-11-22T12:30:00.000Z',
        // A position a client sets counts as recorded when it was set (docs/readings.md).
        lastLocation: { ...change.lastLocation, accuracyMeters: null, recordedAt: expect.stringMatching(TIMESTAMP_MS) },
        updatedAt: expect.stringMatching(TIMESTAMP_MS),
      });
      expect(Date.parse(response.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(device.updatedAt));
      expect(response.headers.get('etag')).toMatch(STRONG_ETAG);
      expect(response.headers.get('etag')).not.toBe(etag);
      const fetched = await get(device.id);
      expect(fetched.body).toEqual(response.body);
      expect(fetched.headers.get('etag')).toBe(response.headers.get('etag'));
    });

    it('clears the nullable fields with null, and metadata with {}', async () => {
      const { device } = await createDevice(stack, tenant, {
        body: { firmwareVersion: '1', batteryLevel: 5, lastSeenAt: '2025-01-01T00:00:00Z', lastLocation: { lat: 1, lng: 2 }, metadata: { a: 1 } },
      });
      const response = await patch(device.id, { firmwareVersion: null, batteryLevel: null, lastSeenAt: null, lastLocation: null, metadata: {} });
      expect(response.status, response.text).toBe(200);
      expect(response.body).toMatchObject({ firmwareVersion: null, batteryLevel: null, lastSeenAt: null, lastLocation: null, metadata: {} });
    });

    it('keeps the version, the ETag and updatedAt when nothing changes', async () => {
      const { device, etag } = await createDevice(stack, tenant, { body: { batteryLevel: 50 } });
      for (const body of [{}, { model: device.model, batteryLevel: 50 }]) {
        const response = await patch(device.id, body, { 'if-match': etag });
        expect(response.status).toBe(200);
        expect(response.body).toEqual(device);
        expect(response.headers.get('etag')).toBe(etag);
      }
    });

    it('changes an assigned device and keeps its assignment', async () => {
      const device = await createAssigned();
      const response = await patch(device.id, { batteryLevel: 12 });
      expect(response.status, response.text).toBe(200);
      expect(response.body).toMatchObject({ status: 'Assigned', shipmentId: device.shipmentId, setId: device.setId, batteryLevel: 12 });
    });

    it.each([
      ['serialNumber', { serialNumber: 'SN-NEW' }, 'serialNumber', 'ReadOnly'],
      ['a null serialNumber', { serialNumber: null }, 'serialNumber', 'ReadOnly'],
      ['a serialNumber of the wrong type', { serialNumber: 5 }, 'serialNumber', 'ReadOnly'],
      ['shipmentId', { shipmentId: randomUUID() }, 'shipmentId', 'ReadOnly'],
      ['setId', { setId: randomUUID() }, 'setId', 'ReadOnly'],
      ['status Retired', { status: 'Retired' }, 'status', 'ReadOnly'],
      ['retiredAt', { retiredAt: '2025-01-01T00:00:00.000Z' }, 'retiredAt', 'ReadOnly'],
      ...SHARED_FIELD_CASES,
    ])('rejects %s with 400 InvalidParameter and changes nothing', async (_case, body, field, issue) => {
      const { device, etag } = await createDevice(stack, tenant);
      expectInvalidParameter(await patch(device.id, body), field, issue);
      const after = await get(device.id);
      expect(after.body).toEqual(device);
      expect(after.headers.get('etag')).toBe(etag);
    });

    it('reports the serialNumber of its own request: ReadOnly even when it is the current one', async () => {
      const device = await create();
      expectInvalidParameter(await patch(device.id, { serialNumber: device.serialNumber }), 'serialNumber', 'ReadOnly');
    });

    it('rejects a body that is not an object with 400 MalformedRequest', async () => {
      const device = await create();
      expectError(await patch(device.id, [{ model: 'x' }]), 400, 'MalformedRequest');
    });

    it('honours If-Match: stale -> 412 and unchanged, current -> 200, * -> 200', async () => {
      const { device, etag } = await createDevice(stack, tenant);
      await expectPatchHonoursIfMatch(
        (body, ifMatch) => patch(device.id, body, { 'if-match': ifMatch }),
        () => get(device.id),
        etag,
        [{ model: 'Second' }, { model: 'Stale' }, { model: 'Third' }, { model: 'Fourth' }],
      );
    });

    it.each(UNMATCHABLE_IF_MATCH)('fails If-Match %s with 412', async (ifMatch) => {
      const device = await create();
      expectError(await patch(device.id, { model: 'x' }, { 'if-match': ifMatch }), 412, 'PreconditionFailed');
      expect((await get(device.id)).body).toEqual(device);
    });

    it('refuses to change a retired device with 409 DeviceRetired, even a patch that changes nothing; 412 comes first', async () => {
      const device = await createRetired();
      const { etag } = { etag: (await get(device.id)).headers.get('etag') ?? '' };
      expectError(await patch(device.id, { model: 'Revived' }), 409, 'DeviceRetired');
      expectError(await patch(device.id, {}, { 'if-match': etag }), 409, 'DeviceRetired');
      expectError(await patch(device.id, { model: 'x' }, { 'if-match': '"1"' }), 412, 'PreconditionFailed');
      expect((await get(device.id)).body).toEqual(device);
    });
  });

  describe('DELETE /devices/{deviceId}', () => {
    it('answers 204 without a body; the device is gone', async () => {
      const device = await create();
      const response = await del(device.id);
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      await expectNotFound([() => get(device.id), () => del(device.id), () => patch(device.id, { model: 'x' }), () => retire(device.id)], 'DeviceNotExists');
      expect(ids(await list('?limit=100'))).not.toContain(device.id);
    });

    it('honours If-Match: stale -> 412 and kept, current -> 204', async () => {
      const { device, etag } = await createDevice(stack, tenant);
      await expectDeleteHonoursIfMatch(
        (ifMatch) => del(device.id, { 'if-match': ifMatch }),
        () => get(device.id),
        () => patch(device.id, { model: 'Changed' }),
        etag,
      );
    });

    it('answers 404 before 412, and 412 before 409', async () => {
      expectError(await del(UNKNOWN_ID, { 'if-match': '"1"' }), 404, 'DeviceNotExists');
      const assigned = await createAssigned();
      expectError(await del(assigned.id, { 'if-match': '"1"' }), 412, 'PreconditionFailed');
      const retired = await createRetired();
      expectError(await del(retired.id, { 'if-match': '"1"' }), 412, 'PreconditionFailed');
    });
  });

  describe('POST /devices/{deviceId}/retire', () => {
    it('answers 204 without a body and the new ETag; the device is Retired with retiredAt', async () => {
      const { device, etag } = await createDevice(stack, tenant);
      const before = Date.now();
      const response = await retire(device.id);
      expect(response.status, response.text).toBe(204);
      expect(response.text).toBe('');
      const newEtag = response.headers.get('etag');
      expect(newEtag).toMatch(STRONG_ETAG);
      expect(newEtag).not.toBe(etag);

      const fetched = await get(device.id);
      expect(fetched.headers.get('etag')).toBe(newEtag);
      expect(fetched.body).toEqual({ ...device, status: 'Retired', retiredAt: expect.stringMatching(TIMESTAMP_MS), updatedAt: expect.any(String) });
      expect(fetched.body.updatedAt).toBe(fetched.body.retiredAt);
      expect(Date.parse(fetched.body.retiredAt)).toBeGreaterThanOrEqual(before - 1000);
    });

    it('honours an optional If-Match: stale or unmatchable -> 412 and not retired; current or * -> 204', async () => {
      const { device, etag } = await createDevice(stack, tenant);
      await patch(device.id, { model: 'Changed' });
      for (const ifMatch of [etag, ...UNMATCHABLE_IF_MATCH]) {
        expectError(await retire(device.id, { 'if-match': ifMatch }), 412, 'PreconditionFailed');
      }
      expect((await get(device.id)).body.status).toBe('Available');
      const current = (await get(device.id)).headers.get('etag') ?? '';
      expect((await retire(device.id, { 'if-match': current })).status).toBe(204);
      const other = await create();
      expect((await retire(other.id, { 'if-match': '*' })).status).toBe(204);
    });

    it('retires a device exactly once under concurrent requests', async () => {
      const device = await create();
      const answers = await Promise.all(Array.from({ length: 5 }, () => retire(device.id)));
      expect(answers.map((answer) => answer.status).sort()).toEqual([204, 409, 409, 409, 409]);
      for (const answer of answers.filter((one) => one.status === 409)) expectError(answer, 409, 'DeviceRetired');
      const fetched = await get(device.id);
      expect(fetched.headers.get('etag')).toBe(answers.find((answer) => answer.status === 204)!.headers.get('etag'));
    });

    it('waits for a concurrent assignment that locked the device, then refuses with 409 DeviceAssigned', async () => {
      const device = await create();
      const writer = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
      await writer.connect();
      try {
        await writer.query('BEGIN');
        await writer.query('SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [device.id]);
        await writer.query(`UPDATE devices SET status = 'Assigned', shipment_id = $2, set_id = $3 WHERE id = $1`, [device.id, randomUUID(), randomUUID()]);
        let settled = false;
        const retiring = retire(device.id).finally(() => (settled = true));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(settled).toBe(false);
        await writer.query('COMMIT');
        expectError(await retiring, 409, 'DeviceAssigned');
      } finally {
        await writer.end();
      }
    });
  });

  describe('assigned and retired devices', () => {
    it.each([
      ['DELETE', 'an assigned', 'DeviceAssigned'],
      ['retire', 'an assigned', 'DeviceAssigned'],
      ['DELETE', 'a retired', 'DeviceRetired'],
      ['retire', 'a retired', 'DeviceRetired'],
      ['PATCH', 'a retired', 'DeviceRetired'],
    ])('%s of %s device is 409 %s, also with If-Match *, and changes nothing', async (action, which, code) => {
      const device = which === 'a retired' ? await createRetired() : await createAssigned();
      const write = (headers?: Record<string, string>) =>
        ({ DELETE: () => del(device.id, headers), retire: () => retire(device.id, headers), PATCH: () => patch(device.id, { model: 'x' }, headers) })[action]!();
      expectError(await write(), 409, code);
      expectError(await write({ 'if-match': '*' }), 409, code);
      const after = await get(device.id);
      expect(after.body).toEqual(device);
      expect((await list(`?serialNumber=${encodeURIComponent(device.serialNumber)}`)).body.devices).toEqual([device]);
    });
  });

  describe('devices that are not there', () => {
    const everyRoute = (id: string) => [
      () => get(id),
      () => patch(id, { model: 'x' }),
      () => patch(id, { model: 'x' }, { 'if-match': '*' }),
      () => del(id),
      () => del(id, { 'if-match': '"1"' }),
      () => retire(id),
    ];

    it('answers 404 DeviceNotExists for an unknown id', async () => {
      await expectNotFound(everyRoute(UNKNOWN_ID), 'DeviceNotExists');
    });

    it.each(NOT_UUIDS)('answers 404 DeviceNotExists for the id %s', async (id) => {
      await expectNotFound(everyRoute(id), 'DeviceNotExists');
    });

    it("answers 404 for another account's device of the same tenant, and never shows, changes, retires or deletes it", async () => {
      const secret = `Other account ${Math.random()}`;
      const { device, path: otherPath } = await createDevice(stack, tenant, { account: 1, body: { model: secret } });
      await expectNotFound(everyRoute(device.id), 'DeviceNotExists', secret);
      expect((await stack.request('GET', otherPath, { token: tenant.token })).body).toEqual(device);
    });

    it("answers 404 for another tenant's device, and never shows, changes, retires or deletes it", async () => {
      const secret = `Other tenant ${Math.random()}`;
      const { device, path: otherPath } = await createDevice(stack, otherTenant, { body: { model: secret } });
      await expectNotFound(everyRoute(device.id), 'DeviceNotExists', secret);
      expect((await stack.request('GET', otherPath, { token: otherTenant.token })).body).toEqual(device);
    });

    it('validates the body of a PATCH before looking the id up', async () => {
      expectInvalidParameter(await patch(UNKNOWN_ID, { batteryLevel: 101 }), 'batteryLevel', 'OutOfRange');
      expectInvalidParameter(await patch(UNKNOWN_ID, { serialNumber: 'x' }), 'serialNumber', 'ReadOnly');
    });
  });

  describe('access', () => {
    it('answers 401 without a token', async () => {
      const device = await create();
      for (const response of [
        await stack.request('GET', path),
        await stack.request('POST', path, { body: deviceBody() }),
        await stack.request('GET', `${path}/${device.id}`),
        await stack.request('PATCH', `${path}/${device.id}`, { body: { model: 'x' } }),
        await stack.request('DELETE', `${path}/${device.id}`),
        await stack.request('POST', `${path}/${device.id}/retire`),
      ]) {
        expect(response.status).toBe(401);
        expect(response.body).toEqual({ error: { code: 'Unauthorized', message: expect.any(String) } });
      }
    });

    it("answers 400 AccountNotFound on another tenant's account", async () => {
      const foreign = devicesPath(otherTenant);
      expectInvalidParameter(await stack.request('GET', foreign, { token: tenant.token }), 'accountId', 'AccountNotFound');
      expectInvalidParameter(await post(deviceBody(), foreign), 'accountId', 'AccountNotFound');
    });

    it('lets a Viewer read but not write (403 Forbidden)', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      const admin = await stack.identity.createApplication(viewer.tenantId, 'Writer', 'Admin', '*');
      const adminToken = await issueToken(stack, viewer.tenantId, admin.applicationId, admin.applicationSecret);
      const { device, path: devicePath } = await createDevice(stack, { ...viewer, token: adminToken });
      const at = devicesPath(viewer);
      const as = { token: viewer.token };

      expect((await stack.request('GET', at, as)).body.devices).toEqual([device]);
      expect((await stack.request('GET', devicePath, as)).body).toEqual(device);
      expectError(await stack.request('POST', at, { ...as, body: deviceBody() }), 403, 'Forbidden');
      expectError(await stack.request('PATCH', devicePath, { ...as, body: { model: 'x' } }), 403, 'Forbidden');
      expectError(await stack.request('DELETE', devicePath, as), 403, 'Forbidden');
      expectError(await stack.request('POST', `${devicePath}/retire`, as), 403, 'Forbidden');
      expect((await stack.request('GET', devicePath, as)).body).toEqual(device);
    });
  });

  describe('the data model for assignment', () => {
    it('ties the status Assigned to a shipment and a set, and Retired to retiredAt', async () => {
      const device = await create();
      const violations = [
        [`UPDATE devices SET status = 'Assigned' WHERE id = $1`, [device.id]],
        [`UPDATE devices SET shipment_id = $2, set_id = $2 WHERE id = $1`, [device.id, randomUUID()]],
        [`UPDATE devices SET status = 'Assigned', shipment_id = $2 WHERE id = $1`, [device.id, randomUUID()]],
        [`UPDATE devices SET status = 'Retired' WHERE id = $1`, [device.id]],
        [`UPDATE devices SET retired_at = now() WHERE id = $1`, [device.id]],
      ] as const;
      for (const [sql, values] of violations) {
        await expect(dms.query(sql, [...values])).rejects.toThrow(/devices_(assignment|retired)_check/);
      }
    });

    it('has a migration that can be undone and applied again', async () => {
      const migration = new CompleteDevices1763800004000();
      // The migrations after it build on its columns (a trigger on the device's link, the stored JSON):
      // they are undone first, newest first, and applied again after it.
      const later = dmsMigrations.slice(dmsMigrations.indexOf(CompleteDevices1763800004000) + 1).map((Migration) => new Migration());
      const runner = { query: (sql: string, parameters?: unknown[]) => dms.query(sql, parameters) };
      const columns = async () =>
        (await dms.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'devices'`)).rows.map((row) => row.column_name);
      await dms.query('BEGIN');
      try {
        for (const step of [...later].reverse()) await step.down(runner as never);
        await migration.down(runner as never);
        expect(await columns()).not.toContain('shipment_id');
        await migration.up(runner as never);
        for (const step of later) await step.up(runner as never);
        expect(await columns()).toEqual(expect.arrayContaining(['shipment_id', 'set_id', 'last_location_lat', 'battery_level']));
      } finally {
        await dms.query('ROLLBACK');
      }
    });
  });
});
