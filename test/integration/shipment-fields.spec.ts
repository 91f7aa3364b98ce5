import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import pg from 'pg';
import { EtaBasis } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { createShipment, createShipmentIn, type ShipmentStatusName } from '../factories/shipment.factory.js';
import { expectError, expectInvalidParameter } from '../support/http-assertions.js';
import { TestStack } from '../support/stack.js';

const UNKNOWN_ID = '0190a4a0-0000-7000-8000-000000000000';
const MODES = ['Road', 'Air', 'Sea', 'Rail', 'Multimodal'];

/** `count` metadata keys. */
const metadataOf = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i]));
const tagsOf = (count: number) => Array.from({ length: count }, (_, i) => `tag-${i}`);
/** Every nullable field of a shipment a client sets, set to null. */
const NULLS = {
  reference: null,
  mode: null,
  carrier: null,
  originId: null,
  destinationId: null,
  plannedDepartureAt: null,
  plannedArrivalAt: null,
};

/**
 * Every value a creation or a patch refuses, with the field and issue it is refused for. `name`
 * rules are in shipments.spec.ts; a patch refuses the same values, as its fields follow the same rules.
 */
const REFUSED: [string, Record<string, unknown>, string, string][] = [
  // reference
  ['an empty reference', { reference: '' }, 'reference', 'OutOfRange'],
  ['a reference of 201 characters', { reference: 'r'.repeat(201) }, 'reference', 'OutOfRange'],
  ['a numeric reference', { reference: 42 }, 'reference', 'InvalidFormat'],
  ['a boolean reference', { reference: true }, 'reference', 'InvalidFormat'],
  ['an array reference', { reference: ['PO-1'] }, 'reference', 'InvalidFormat'],
  ['an object reference', { reference: { id: 'PO-1' } }, 'reference', 'InvalidFormat'],
  // mode
  ['an unknown mode', { mode: 'Truck' }, 'mode', 'InvalidFormat'],
  ['a mode in the wrong case', { mode: 'road' }, 'mode', 'InvalidFormat'],
  ['an empty mode', { mode: '' }, 'mode', 'InvalidFormat'],
  ['a numeric mode', { mode: 1 }, 'mode', 'InvalidFormat'],
  ['an array mode', { mode: ['Road'] }, 'mode', 'InvalidFormat'],
  // carrier
  ['an empty carrier', { carrier: '' }, 'carrier', 'OutOfRange'],
  ['a carrier of 201 characters', { carrier: 'c'.repeat(201) }, 'carrier', 'OutOfRange'],
  ['a numeric carrier', { carrier: 7 }, 'carrier', 'InvalidFormat'],
  ['an object carrier', { carrier: { name: 'DHL' } }, 'carrier', 'InvalidFormat'],
  // originId and destinationId
  ['an originId that is not a UUID', { originId: 'warehouse-1' }, 'originId', 'InvalidFormat'],
  ['an empty originId', { originId: '' }, 'originId', 'InvalidFormat'],
  ['a numeric originId', { originId: 12 }, 'originId', 'InvalidFormat'],
  ['an originId with a character too many', { originId: `${UNKNOWN_ID}0` }, 'originId', 'InvalidFormat'],
  ['an originId with a letter outside hex', { originId: `${UNKNOWN_ID.slice(0, -1)}g` }, 'originId', 'InvalidFormat'],
  ['an object originId', { originId: { id: UNKNOWN_ID } }, 'originId', 'InvalidFormat'],
  ['a destinationId that is not a UUID', { destinationId: 'port-7' }, 'destinationId', 'InvalidFormat'],
  ['a numeric destinationId', { destinationId: 3 }, 'destinationId', 'InvalidFormat'],
  ['an array destinationId', { destinationId: [UNKNOWN_ID] }, 'destinationId', 'InvalidFormat'],
  // plannedDepartureAt and plannedArrivalAt
  ['a date without time', { plannedDepartureAt: '2026-12-01' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['a time without time zone', { plannedDepartureAt: '2026-12-01T08:00:00' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['a time without seconds', { plannedDepartureAt: '2026-12-01T08:00Z' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['a space for the T', { plannedDepartureAt: '2026-12-01 08:00:00Z' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['an offset without colon', { plannedDepartureAt: '2026-12-01T08:00:00+0100' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['a named time zone', { plannedDepartureAt: '2026-12-01T08:00:00 CET' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['February 30th', { plannedDepartureAt: '2026-02-30T08:00:00Z' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['February 29th of a common year', { plannedDepartureAt: '2025-02-29T08:00:00Z' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['month 13', { plannedDepartureAt: '2026-13-01T08:00:00Z' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['month 00', { plannedDepartureAt: '2026-00-01T08:00:00Z' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['hour 24', { plannedDepartureAt: '2026-12-01T24:00:00Z' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['minute 60', { plannedDepartureAt: '2026-12-01T08:60:00Z' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['a leap second', { plannedDepartureAt: '2016-12-31T23:59:60Z' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['an offset of 24 hours', { plannedDepartureAt: '2026-12-01T08:00:00+24:00' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['ten fraction digits', { plannedDepartureAt: '2026-12-01T08:00:00.1234567890Z' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['a five-digit year', { plannedDepartureAt: '12026-12-01T08:00:00Z' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['words', { plannedDepartureAt: 'tomorrow morning' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['an empty string', { plannedDepartureAt: '' }, 'plannedDepartureAt', 'InvalidFormat'],
  ['epoch milliseconds', { plannedDepartureAt: 1796112000000 }, 'plannedDepartureAt', 'InvalidFormat'],
  ['a date-time in an object', { plannedDepartureAt: { at: '2026-12-01T08:00:00Z' } }, 'plannedDepartureAt', 'InvalidFormat'],
  ['year 0000', { plannedDepartureAt: '0000-06-01T00:00:00Z' }, 'plannedDepartureAt', 'OutOfRange'],
  ['an instant before year 0001 in UTC', { plannedDepartureAt: '0001-01-01T00:30:00+01:00' }, 'plannedDepartureAt', 'OutOfRange'],
  ['an instant after year 9999 in UTC', { plannedDepartureAt: '9999-12-31T23:30:00-01:00' }, 'plannedDepartureAt', 'OutOfRange'],
  ['an arrival without time zone', { plannedArrivalAt: '2026-12-03T17:00:00' }, 'plannedArrivalAt', 'InvalidFormat'],
  ['an arrival on April 31st', { plannedArrivalAt: '2026-04-31T17:00:00Z' }, 'plannedArrivalAt', 'InvalidFormat'],
  ['a numeric arrival', { plannedArrivalAt: 20261203 }, 'plannedArrivalAt', 'InvalidFormat'],
  ['an arrival after year 9999', { plannedArrivalAt: '9999-12-31T23:00:00-02:00' }, 'plannedArrivalAt', 'OutOfRange'],
  // tags
  ['null tags', { tags: null }, 'tags', 'InvalidFormat'],
  ['tags as a string', { tags: 'fragile' }, 'tags', 'InvalidFormat'],
  ['tags as an object', { tags: { fragile: true } }, 'tags', 'InvalidFormat'],
  ['a numeric tag', { tags: ['fragile', 7] }, 'tags', 'InvalidFormat'],
  ['a null tag', { tags: [null] }, 'tags', 'InvalidFormat'],
  ['a nested array tag', { tags: [['fragile']] }, 'tags', 'InvalidFormat'],
  ['a repeated tag', { tags: ['fragile', 'cold', 'fragile'] }, 'tags', 'InvalidFormat'],
  ['an empty tag', { tags: [''] }, 'tags', 'OutOfRange'],
  ['a tag of 51 characters', { tags: ['t'.repeat(51)] }, 'tags', 'OutOfRange'],
  ['21 tags', { tags: tagsOf(21) }, 'tags', 'OutOfRange'],
  // metadata
  ['null metadata', { metadata: null }, 'metadata', 'InvalidFormat'],
  ['array metadata', { metadata: ['a'] }, 'metadata', 'InvalidFormat'],
  ['a nested object in metadata', { metadata: { a: { b: 1 } } }, 'metadata', 'InvalidFormat'],
  ['metadata with 51 keys', { metadata: metadataOf(51) }, 'metadata', 'OutOfRange'],
  ['metadata over 8 KiB', { metadata: { a: 'x'.repeat(8192) } }, 'metadata', 'OutOfRange'],
  // fields the API sets
  ['departedAt', { departedAt: '2026-12-01T08:00:00.000Z' }, 'departedAt', 'ReadOnly'],
  ['deliveredAt', { deliveredAt: '2026-12-01T08:00:00.000Z' }, 'deliveredAt', 'ReadOnly'],
  ['completedAt', { completedAt: '2026-12-01T08:00:00.000Z' }, 'completedAt', 'ReadOnly'],
  ['cancelledAt', { cancelledAt: null }, 'cancelledAt', 'ReadOnly'],
  ['updatedAt', { updatedAt: '2026-12-01T08:00:00.000Z' }, 'updatedAt', 'ReadOnly'],
  ['an unknown field', { origin: UNKNOWN_ID }, 'origin', 'UnknownField'],
];

describe('shipment fields over HTTP', () => {
  let stack: TestStack;
  /** Account 0 for most tests, 1 as "another account of the same tenant", 2 for the list filters. */
  let tenant: TestTenant;
  let otherTenant: TestTenant;
  let path: string;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack, { accounts: 3 });
    otherTenant = await createTenant(stack);
    path = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
  });
  afterAll(() => stack?.stop());

  const post = (body: Record<string, unknown>, at = path) => stack.request('POST', at, { token: tenant.token, body });
  const postNamed = (fields: Record<string, unknown>) => post({ name: 'Fields', ...fields });
  const get = (id: string) => stack.request('GET', `${path}/${id}`, { token: tenant.token });
  const patch = (id: string, body: unknown, headers?: Record<string, string>) =>
    stack.request('PATCH', `${path}/${id}`, { token: tenant.token, body, headers });
  const poiIn = async (account = 0, owner = tenant) => (await createPointOfInterest(stack, owner, { account })).pointOfInterest.id as string;

  describe('on creation', () => {
    it('stores every field as given, and GET and the list show the same shipment', async () => {
      const [origin, destination] = [await poiIn(), await poiIn()];
      const body = {
        name: 'Rotterdam to Lyon',
        reference: `PO-${randomUUID()}`,
        mode: 'Multimodal',
        carrier: 'DHL Freight — “Express”',
        originId: origin,
        destinationId: destination,
        plannedDepartureAt: '2026-12-01T08:00:00.000Z',
        plannedArrivalAt: '2026-12-03T17:30:00.250Z',
        tags: ['fragile', 'cold-chain', 'Größe XL'],
        metadata: { po: '4711', pallets: 12, hazardous: false },
      };
      const created = await post(body);
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject({ ...body, status: 'Planned', departedAt: null, deliveredAt: null, completedAt: null, cancelledAt: null });
      expect((await get(created.body.id)).body).toEqual(created.body);
      const listed = await stack.request('GET', `${path}?reference=${encodeURIComponent(body.reference)}`, { token: tenant.token });
      expect(listed.body.items).toEqual([created.body]);
    });

    it('shows any text and metadata the same in the list as in GET and in the answer to the create', async () => {
      // The list's JSON is assembled from PostgreSQL's text output, GET's by JSON.stringify: any string
      // (quotes, backslashes, control characters, astral planes) and any metadata must come out equal.
      const anyText = (maxLength: number) => fc.string({ unit: 'binary', minLength: 1, maxLength });
      let accepted = 0;
      // Metadata values are strings, finite numbers and booleans (docs/api.md, "Input rules").
      const metadataValue = fc.oneof(anyText(20), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean());
      await fc.assert(
        fc.asyncProperty(
          anyText(40),
          anyText(40),
          fc.uniqueArray(anyText(12), { maxLength: 3 }),
          fc.dictionary(anyText(10), metadataValue, { maxKeys: 4 }),
          async (name, carrier, tags, metadata) => {
            const reference = `P-${randomUUID()}`;
            const created = await post({ name, carrier, reference, tags, metadata });
            // Some text is refused (a NUL, for example); what is accepted must read back the same everywhere.
            expect([201, 400], created.text).toContain(created.status);
            if (created.status !== 201) return;
            accepted++;
            expect((await get(created.body.id)).body).toEqual(created.body);
            const listed = await stack.request('GET', `${path}?reference=${reference}`, { token: tenant.token });
            expect(listed.body.items).toEqual([created.body]);
          },
        ),
        { numRuns: 40, seed: 20261123 },
      );
      // Not vacuous: most are accepted and compared.
      expect(accepted).toBeGreaterThanOrEqual(30);
    });

    it('defaults every optional field: null, no tags, empty metadata', async () => {
      const created = await post({ name: 'Bare' });
      expect(created.body).toMatchObject({ ...NULLS, tags: [], metadata: {} });
    });

    it('accepts null for every nullable field', async () => {
      const created = await postNamed(NULLS);
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject(NULLS);
    });

    it.each(MODES)('accepts the mode %s', async (mode) => {
      const created = await postNamed({ mode });
      expect(created.status, created.text).toBe(201);
      expect(created.body.mode).toBe(mode);
    });

    it.each([
      ['a reference of 1 character', { reference: 'R' }],
      ['a reference of 200 characters', { reference: 'r'.repeat(200) }],
      ['a carrier of 1 character', { carrier: 'X' }],
      ['a carrier of 200 characters', { carrier: 'c'.repeat(200) }],
      ['no tags', { tags: [] }],
      ['20 tags', { tags: tagsOf(20) }],
      ['tags of 1 and 50 characters', { tags: ['a', 't'.repeat(50)] }],
      ['tags differing only in case', { tags: ['Fragile', 'fragile'] }],
      ['metadata with 50 keys', { metadata: metadataOf(50) }],
      ['a departure in year 0001', { plannedDepartureAt: '0001-01-01T00:00:00.000Z' }],
      ['an arrival at the last millisecond of 9999', { plannedArrivalAt: '9999-12-31T23:59:59.999Z' }],
      ['February 29th of a leap year', { plannedDepartureAt: '2028-02-29T12:00:00.000Z' }],
    ])('accepts %s', async (_case, fields) => {
      const created = await postNamed(fields);
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject(fields);
    });

    it.each([
      ['Z', '2026-12-01T08:00:00Z', '2026-12-01T08:00:00.000Z'],
      ['a positive offset', '2026-12-01T09:30:00+01:30', '2026-12-01T08:00:00.000Z'],
      ['a negative offset across midnight', '2026-11-30T22:00:00-10:00', '2026-12-01T08:00:00.000Z'],
      ['-00:00', '2026-12-01T08:00:00-00:00', '2026-12-01T08:00:00.000Z'],
      ['lower-case t and z', '2026-12-01t08:00:00z', '2026-12-01T08:00:00.000Z'],
      ['one fraction digit', '2026-12-01T08:00:00.5Z', '2026-12-01T08:00:00.500Z'],
      ['nine fraction digits (cut to milliseconds)', '2026-12-01T08:00:00.123987654Z', '2026-12-01T08:00:00.123Z'],
      ['an offset crossing into the next year', '2026-12-31T23:30:00-01:00', '2027-01-01T00:30:00.000Z'],
    ])('answers a date-time with %s in UTC with milliseconds', async (_case, given, expected) => {
      const created = await postNamed({ plannedDepartureAt: given, plannedArrivalAt: given });
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject({ plannedDepartureAt: expected, plannedArrivalAt: expected });
      expect((await get(created.body.id)).body).toMatchObject({ plannedDepartureAt: expected, plannedArrivalAt: expected });
    });

    it.each(REFUSED)('refuses %s with 400 InvalidParameter', async (_case, fields, field, issue) => {
      expectInvalidParameter(await postNamed(fields), field, issue);
    });

    it('creates nothing when it refuses a body', async () => {
      const fresh = await createTenant(stack);
      const freshPath = `/v1/accounts/${fresh.accountIds[0]}/shipments`;
      const refused = await stack.request('POST', freshPath, { token: fresh.token, body: { name: 'x', tags: [''] } });
      expect(refused.status).toBe(400);
      expect((await stack.request('GET', freshPath, { token: fresh.token })).body.items).toEqual([]);
    });
  });

  describe('planned departure and arrival', () => {
    it('refuses an arrival before the departure, comparing instants across offsets', async () => {
      expectInvalidParameter(
        await postNamed({ plannedDepartureAt: '2026-12-01T08:00:00Z', plannedArrivalAt: '2026-12-01T07:59:59.999Z' }),
        'plannedArrivalAt',
        'OutOfRange',
      );
      // 08:30 at +01:00 is 07:30 UTC, before the departure although its digits are later.
      expectInvalidParameter(
        await postNamed({ plannedDepartureAt: '2026-12-01T08:00:00Z', plannedArrivalAt: '2026-12-01T08:30:00+01:00' }),
        'plannedArrivalAt',
        'OutOfRange',
      );
    });

    it('accepts an arrival at the very instant of the departure, or either one alone', async () => {
      for (const fields of [
        { plannedDepartureAt: '2026-12-01T08:00:00Z', plannedArrivalAt: '2026-12-01T09:00:00+01:00' },
        { plannedArrivalAt: '2020-01-01T00:00:00Z' },
        { plannedDepartureAt: '2030-01-01T00:00:00Z', plannedArrivalAt: null },
      ]) {
        const created = await postNamed(fields);
        expect(created.status, created.text).toBe(201);
      }
    });

    it('applies the rule to the pair a patch leaves, whichever of the two it changes', async () => {
      const shipment = await createShipment(stack, tenant, {
        body: { plannedDepartureAt: '2026-12-01T08:00:00Z', plannedArrivalAt: '2026-12-03T17:00:00Z' },
      });
      expectInvalidParameter(await patch(shipment.id, { plannedArrivalAt: '2026-11-30T00:00:00Z' }), 'plannedArrivalAt', 'OutOfRange');
      expectInvalidParameter(await patch(shipment.id, { plannedDepartureAt: '2026-12-04T00:00:00Z' }), 'plannedArrivalAt', 'OutOfRange');
      expectInvalidParameter(
        await patch(shipment.id, { plannedDepartureAt: '2026-12-05T00:00:00Z', plannedArrivalAt: '2026-12-04T00:00:00Z' }),
        'plannedArrivalAt',
        'OutOfRange',
      );
      expect((await get(shipment.id)).body).toEqual(shipment);

      const both = await patch(shipment.id, { plannedDepartureAt: '2026-12-05T00:00:00Z', plannedArrivalAt: '2026-12-06T00:00:00Z' });
      expect(both.status, both.text).toBe(200);
      const cleared = await patch(shipment.id, { plannedDepartureAt: null });
      expect(cleared.status).toBe(200);
      const earlier = await patch(shipment.id, { plannedArrivalAt: '2026-01-01T00:00:00Z' });
      expect(earlier.status, earlier.text).toBe(200);
      expect(earlier.body).toMatchObject({ plannedDepartureAt: null, plannedArrivalAt: '2026-01-01T00:00:00.000Z' });
      expectInvalidParameter(await patch(shipment.id, { plannedDepartureAt: '2026-01-01T00:00:00.001Z' }), 'plannedArrivalAt', 'OutOfRange');
    });
  });

  describe('PATCH', () => {
    it('changes each field, keeps the ones left out, and clears nullable ones with null', async () => {
      const [origin, destination] = [await poiIn(), await poiIn()];
      const shipment = await createShipment(stack, tenant, { body: { tags: ['a'], metadata: { a: 1 } } });
      const changes: Record<string, unknown>[] = [
        { name: 'Renamed' },
        { reference: `REF-${randomUUID()}` },
        { mode: 'Sea' },
        { carrier: 'Maersk' },
        { originId: origin },
        { destinationId: destination },
        { plannedDepartureAt: '2026-12-01T08:00:00.000Z' },
        { plannedArrivalAt: '2026-12-09T08:00:00.000Z' },
        { tags: ['b', 'c'] },
        { metadata: { b: true } },
      ];
      let expected = { ...shipment };
      for (const change of changes) {
        const changed = await patch(shipment.id, change);
        expect(changed.status, changed.text).toBe(200);
        expected = { ...expected, ...change, updatedAt: changed.body.updatedAt };
        // With a destination and a planned arrival and no position yet, the estimate is the plan (docs/eta.md).
        const planned = expected.destinationId ? (expected.plannedArrivalAt as string | null) : null;
        expected.eta = planned
          ? { arrivalAt: planned, earliestAt: planned, latestAt: planned, remainingMeters: null, basis: EtaBasis.Planned, asOf: null, calculatedAt: changed.body.eta?.calculatedAt }
          : null;
        expect(changed.body).toEqual(expected);
      }
      const cleared = await patch(shipment.id, { ...NULLS, tags: [], metadata: {} });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toEqual({ ...expected, ...NULLS, tags: [], metadata: {}, eta: null, updatedAt: cleared.body.updatedAt });
      expect((await get(shipment.id)).body).toEqual(cleared.body);
    });

    it.each([
      ['name', { name: null }],
      ['tags', { tags: null }],
      ['metadata', { metadata: null }],
    ])('refuses null for %s, which is not nullable', async (field, body) => {
      const shipment = await createShipment(stack, tenant);
      expectInvalidParameter(await patch(shipment.id, body), field, 'InvalidFormat');
    });

    it.each(REFUSED)('refuses %s with 400 InvalidParameter and changes nothing', async (_case, fields, field, issue) => {
      const shipment = await createShipment(stack, tenant);
      expectInvalidParameter(await patch(shipment.id, fields), field, issue);
      expect((await get(shipment.id)).body).toEqual(shipment);
    });

    it('keeps the version when a patch changes nothing, and moves it on when one does', async () => {
      const shipment = await createShipment(stack, tenant, {
        body: { tags: ['x', 'y'], metadata: { a: 1, b: 'two' }, plannedDepartureAt: '2026-12-01T08:00:00Z' },
      });
      const { headers } = await get(shipment.id);
      const etag = headers.get('etag')!;
      const sameAgain = [
        {},
        { name: shipment.name },
        { tags: ['x', 'y'], metadata: { b: 'two', a: 1 } },
        { plannedDepartureAt: '2026-12-01T09:00:00+01:00' },
        { reference: null },
      ];
      for (const same of sameAgain) {
        const unchanged = await patch(shipment.id, same, { 'if-match': etag });
        expect(unchanged.status, unchanged.text).toBe(200);
        expect(unchanged.headers.get('etag')).toBe(etag);
        expect(unchanged.body).toEqual(shipment);
      }
      const reordered = await patch(shipment.id, { tags: ['y', 'x'] }, { 'if-match': etag });
      expect(reordered.status).toBe(200);
      expect(reordered.headers.get('etag')).not.toBe(etag);
    });

    it('changes an InTransit and a Delivered shipment, which are still ongoing', async () => {
      for (const status of ['InTransit', 'Delivered'] as ShipmentStatusName[]) {
        const shipment = await createShipmentIn(stack, tenant, status);
        const changed = await patch(shipment.id, { carrier: 'Late change', tags: ['late'] });
        expect(changed.status, changed.text).toBe(200);
        expect(changed.body).toMatchObject({ status, carrier: 'Late change', tags: ['late'] });
      }
    });
  });

  describe('reference: unique within the account', () => {
    it('refuses a second shipment with the reference with 409 DuplicateReference', async () => {
      const reference = `PO-${randomUUID()}`;
      const first = await postNamed({ reference });
      expect(first.status).toBe(201);
      expectError(await postNamed({ reference }), 409, 'DuplicateReference');
      const listed = await stack.request('GET', `${path}?reference=${reference}&includeTotal=true`, { token: tenant.token });
      expect(listed.body.items.map((s: { id: string }) => s.id)).toEqual([first.body.id]);
    });

    it('allows the reference in another account and another tenant, in another case, and any number of null references', async () => {
      const reference = `PO-${randomUUID()}`;
      expect((await postNamed({ reference })).status).toBe(201);
      expect((await post({ name: 'x', reference }, `/v1/accounts/${tenant.accountIds[1]}/shipments`)).status).toBe(201);
      const foreign = await stack.request('POST', `/v1/accounts/${otherTenant.accountIds[0]}/shipments`, {
        token: otherTenant.token,
        body: { name: 'x', reference },
      });
      expect(foreign.status).toBe(201);
      expect((await postNamed({ reference: reference.toLowerCase() })).status).toBe(201);
      for (let i = 0; i < 3; i++) expect((await postNamed({ reference: null })).status).toBe(201);
    });

    it('refuses a patch to a reference in use, allows keeping its own, and frees a reference that is cleared or deleted', async () => {
      const [a, b] = [`A-${randomUUID()}`, `B-${randomUUID()}`];
      const first = await createShipment(stack, tenant, { body: { reference: a } });
      const second = await createShipment(stack, tenant, { body: { reference: b } });
      expectError(await patch(second.id, { reference: a }), 409, 'DuplicateReference');
      expect((await get(second.id)).body).toEqual(second);
      expect((await patch(first.id, { reference: a, name: 'Same reference' })).status).toBe(200);

      expect((await patch(first.id, { reference: null })).status).toBe(200);
      expect((await patch(second.id, { reference: a })).status).toBe(200);
      expect((await stack.request('DELETE', `${path}/${second.id}`, { token: tenant.token })).status).toBe(204);
      expect((await postNamed({ reference: a })).status).toBe(201);
    });

    it('of 10 concurrent creations with one reference, exactly one succeeds', async () => {
      const reference = `RACE-${randomUUID()}`;
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => postNamed({ name: `Racer ${i}`, reference })));
      const created = answers.filter((answer) => answer.status === 201);
      expect(created).toHaveLength(1);
      for (const answer of answers.filter((a) => a.status !== 201)) expectError(answer, 409, 'DuplicateReference');
      const listed = await stack.request('GET', `${path}?reference=${reference}`, { token: tenant.token });
      expect(listed.body.items.map((s: { id: string }) => s.id)).toEqual([created[0]!.body.id]);
    });

    it('of concurrent patches giving several shipments one reference, exactly one succeeds', async () => {
      const reference = `RACE-${randomUUID()}`;
      const shipments = await Promise.all(Array.from({ length: 6 }, () => createShipment(stack, tenant)));
      const answers = await Promise.all(shipments.map((shipment) => patch(shipment.id, { reference })));
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
      for (const answer of answers.filter((a) => a.status !== 200)) expectError(answer, 409, 'DuplicateReference');
    });
  });

  describe('originId and destinationId: points of interest of the account', () => {
    it('accepts points of interest of the account, the same one for both, written in upper case', async () => {
      const place = await poiIn();
      const created = await postNamed({ originId: place.toUpperCase(), destinationId: place });
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject({ originId: place, destinationId: place });
      expect((await get(created.body.id)).body).toMatchObject({ originId: place, destinationId: place });
    });

    it.each(['originId', 'destinationId'])('refuses as %s an unknown id, a point of interest of another account or tenant', async (field) => {
      const candidates = {
        unknown: UNKNOWN_ID,
        'another account': await poiIn(1),
        'another tenant': await poiIn(0, otherTenant),
        'a shipment': (await createShipment(stack, tenant)).id,
      };
      const shipment = await createShipment(stack, tenant);
      for (const id of Object.values(candidates)) {
        expectInvalidParameter(await postNamed({ [field]: id }), field, 'UnknownReference');
        expectInvalidParameter(await patch(shipment.id, { [field]: id }), field, 'UnknownReference');
      }
      expect((await get(shipment.id)).body).toEqual(shipment);
    });

    it('refuses a point of interest that was deleted', async () => {
      const { pointOfInterest, path: poiPath } = await createPointOfInterest(stack, tenant);
      expect((await stack.request('DELETE', poiPath, { token: tenant.token })).status).toBe(204);
      expectInvalidParameter(await postNamed({ destinationId: pointOfInterest.id }), 'destinationId', 'UnknownReference');
    });

    it('waits for a point of interest being deleted, then refuses it', async () => {
      const place = await poiIn();
      const deleter = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
      await deleter.connect();
      try {
        // As the delete endpoint does: lock the point of interest, then delete it.
        await deleter.query('BEGIN');
        await deleter.query('SELECT 1 FROM points_of_interest WHERE id = $1 FOR UPDATE', [place]);
        await deleter.query('DELETE FROM points_of_interest WHERE id = $1', [place]);
        let settled = false;
        const creating = postNamed({ originId: place }).finally(() => (settled = true));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(settled).toBe(false);
        await deleter.query('COMMIT');
        expectInvalidParameter(await creating, 'originId', 'UnknownReference');
      } finally {
        await deleter.end();
      }
    });

    it('holds off the delete of a point of interest while a shipment write has it locked', async () => {
      const { pointOfInterest, path: poiPath } = await createPointOfInterest(stack, tenant);
      const locker = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
      await locker.connect();
      try {
        // A shipment write in flight holds the point of interest FOR SHARE, as the OMS does.
        await locker.query('BEGIN');
        await locker.query('SELECT 1 FROM points_of_interest WHERE id = $1 FOR SHARE', [pointOfInterest.id]);
        let settled = false;
        const deleting = stack.request('DELETE', poiPath, { token: tenant.token }).finally(() => (settled = true));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(settled).toBe(false);
        await locker.query('ROLLBACK');
        expect((await deleting).status).toBe(204);
      } finally {
        await locker.end();
      }
      expectInvalidParameter(await postNamed({ originId: pointOfInterest.id }), 'originId', 'UnknownReference');
    });

    it('keeps a point of interest in use while a shipment refers to it', async () => {
      const { pointOfInterest, path: poiPath } = await createPointOfInterest(stack, tenant);
      const shipment = await createShipment(stack, tenant, { body: { destinationId: pointOfInterest.id } });
      expectError(await stack.request('DELETE', poiPath, { token: tenant.token }), 409, 'PointOfInterestInUse');
      expect((await patch(shipment.id, { destinationId: null })).status).toBe(200);
      expect((await stack.request('DELETE', poiPath, { token: tenant.token })).status).toBe(204);
    });
  });

  describe('GET /shipments filters', () => {
    let listPath: string;
    /** Ids by what they were made to match, in creation order. */
    const made: Record<string, string[]> = {};

    beforeAll(async () => {
      listPath = `/v1/accounts/${tenant.accountIds[2]}/shipments`;
      const plan: [string, ShipmentStatusName, Record<string, unknown>][] = [
        ['p1', 'Planned', { tags: ['fragile', 'cold'], reference: 'REF-1' }],
        ['t1', 'InTransit', { tags: ['fragile'] }],
        ['p2', 'Planned', { tags: ['Fragile'] }],
        ['d1', 'Delivered', { tags: ['cold'], reference: 'REF-2' }],
        ['c1', 'Completed', { tags: ['fragile'] }],
        ['x1', 'Cancelled', {}],
        ['p3', 'Planned', { tags: ['fragile', 'größe xl'] }],
        ['t2', 'InTransit', { reference: 'REF-3', tags: ['cold', 'fragile'] }],
      ];
      for (const [key, status, body] of plan) {
        made[key] = [(await createShipmentIn(stack, tenant, status, { account: 2, body })).id];
      }
    });

    const list = async (query: string) => {
      const response = await stack.request('GET', `${listPath}?${query}`, { token: tenant.token });
      expect(response.status, response.text).toBe(200);
      return { ids: (response.body.items as { id: string }[]).map((item) => item.id), metadata: response.body.metadata, response };
    };
    const ids = (...keys: string[]) => keys.map((key) => made[key]![0]!);
    const refused = (query: string) => stack.request('GET', `${listPath}?${query}`, { token: tenant.token });

    it.each([
      ['status=Planned', ['p1', 'p2', 'p3']],
      ['status=InTransit', ['t1', 't2']],
      ['status=Delivered', ['d1']],
      ['status=Completed', ['c1']],
      ['status=Cancelled', ['x1']],
      ['status=Planned,InTransit', ['p1', 't1', 'p2', 'p3', 't2']],
      ['status=Completed,Cancelled,Planned', ['p1', 'p2', 'c1', 'x1', 'p3']],
      ['status=Planned,Planned', ['p1', 'p2', 'p3']],
      ['reference=REF-2', ['d1']],
      ['reference=ref-2', []],
      ['reference=REF-404', []],
      ['tag=fragile', ['p1', 't1', 'c1', 'p3', 't2']],
      ['tag=Fragile', ['p2']],
      ['tag=fragil', []],
      [`tag=${encodeURIComponent('größe xl')}`, ['p3']],
      ['status=Planned&tag=fragile', ['p1', 'p3']],
      ['status=InTransit,Delivered&tag=cold', ['d1', 't2']],
      ['status=InTransit&reference=REF-3&tag=fragile', ['t2']],
      ['status=Planned&reference=REF-3', []],
    ])('%s lists exactly the matching shipments, oldest first', async (query, keys) => {
      const page = await list(`${query}&includeTotal=true`);
      expect(page.ids).toEqual(ids(...keys));
      expect(page.metadata).toEqual({ nextCursor: null, total: keys.length });
    });

    it('lists every status with the whole collection when not filtering', async () => {
      expect((await list('')).ids).toEqual(Object.values(made).flat());
    });

    it('pages a filtered list to its end with cursors', async () => {
      const first = await list('status=Planned,InTransit&limit=2&includeTotal=true');
      expect(first.ids).toEqual(ids('p1', 't1'));
      expect(first.metadata.total).toBe(5);
      const second = await list(`status=Planned,InTransit&limit=2&cursor=${encodeURIComponent(first.metadata.nextCursor)}`);
      expect(second.ids).toEqual(ids('p2', 'p3'));
      const third = await list(`status=Planned,InTransit&limit=2&cursor=${encodeURIComponent(second.metadata.nextCursor)}`);
      expect(third.ids).toEqual(ids('t2'));
      expect(third.metadata.nextCursor).toBeNull();
    });

    it('binds the cursor to the filters: the same filters continue it, any other is 400 InvalidCursor', async () => {
      const cursor = encodeURIComponent((await list('status=Planned,InTransit&tag=fragile&limit=1')).metadata.nextCursor);
      expect((await list(`status=Planned,InTransit&tag=fragile&cursor=${cursor}`)).ids).toEqual(ids('t1', 'p3', 't2'));
      // The same set of statuses in another order, or repeated, is the same filter.
      expect((await list(`tag=fragile&status=InTransit,Planned,InTransit&cursor=${cursor}`)).ids).toEqual(ids('t1', 'p3', 't2'));
      const others = [
        '',
        'status=Planned,InTransit',
        'tag=fragile',
        'status=Planned&tag=fragile',
        'status=Planned,InTransit&tag=cold',
        'status=Planned,InTransit&tag=fragile&reference=REF-1',
      ];
      for (const other of others) {
        expectInvalidParameter(await refused(`${other}&cursor=${cursor}`), 'cursor', 'InvalidCursor');
      }
      const unfiltered = encodeURIComponent((await list('limit=1')).metadata.nextCursor);
      expectInvalidParameter(await refused(`status=Planned&cursor=${unfiltered}`), 'cursor', 'InvalidCursor');
      expectInvalidParameter(await refused(`reference=REF-1&cursor=${unfiltered}`), 'cursor', 'InvalidCursor');
    });

    it.each([
      ['status=planned', 'status', 'InvalidFormat'],
      ['status=Shipped', 'status', 'InvalidFormat'],
      ['status=', 'status', 'InvalidFormat'],
      ['status=Planned,', 'status', 'InvalidFormat'],
      ['status=,Planned', 'status', 'InvalidFormat'],
      ['status=Planned,,InTransit', 'status', 'InvalidFormat'],
      ['status=Planned%20', 'status', 'InvalidFormat'],
      ['status=Planned;InTransit', 'status', 'InvalidFormat'],
      ['status=Planned&status=InTransit', 'status', 'InvalidFormat'],
      ['reference=', 'reference', 'OutOfRange'],
      [`reference=${'r'.repeat(201)}`, 'reference', 'OutOfRange'],
      ['reference=a&reference=b', 'reference', 'InvalidFormat'],
      ['tag=', 'tag', 'OutOfRange'],
      [`tag=${'t'.repeat(51)}`, 'tag', 'OutOfRange'],
      ['tags=fragile', 'tags', 'UnknownField'],
      ['mode=Road', 'mode', 'UnknownField'],
    ])('%s -> 400 %s %s', async (query, field, issue) => {
      expectInvalidParameter(await refused(query), field, issue);
    });

    it('accepts a reference of 200 and a tag of 50 characters', async () => {
      expect((await list(`reference=${'r'.repeat(200)}&tag=${'t'.repeat(50)}`)).ids).toEqual([]);
    });
  });
});
