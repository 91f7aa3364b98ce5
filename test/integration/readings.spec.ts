import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { type Device, jetStreamName } from '@tracking/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assignDevice, createDevice, devicesPath, unassignDevice, uniqueSerialNumber } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { clockPast } from '../support/clock.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS, UUID_V7 } from '../support/http-assertions.js';
import { connectTestNats, streamMessages } from '../support/jetstream.js';
import { type HttpResult, TestStack } from '../support/stack.js';

const DAY_MS = 86_400_000;
const RETENTION_DAYS = 3;

/** An instant `msAgo` before now, as RFC 3339 with milliseconds. */
function ago(msAgo: number): string {
  return new Date(Date.now() - msAgo).toISOString();
}

/** Distinct, increasing recordedAt values a little in the past. */
let clock = Date.now() - 3_600_000;
function nextTime(): string {
  clock += 1;
  return new Date(clock).toISOString();
}

describe('readings', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;
  let dms: pg.Client;
  let device: Device;
  let base: string;

  beforeAll(async () => {
    stack = await TestStack.start({ env: { READINGS_RETENTION_DAYS: String(RETENTION_DAYS) } });
    tenant = await createTenant(stack, { accounts: 2 });
    other = await createTenant(stack);
    device = (await createDevice(stack, tenant)).device;
    base = `/v1/accounts/${tenant.accountIds[0]}`;
    dms = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await dms.connect();
  });
  afterAll(async () => {
    await dms?.end();
    await stack?.stop();
  });

  const ingest = (readings: unknown, token = tenant.token, at = base, baseUrl?: string) =>
    stack.request('POST', `${at}/readings`, { token, body: { readings }, baseUrl });
  const readingsOf = (deviceId: string, query = '', token = tenant.token, at = base) =>
    stack.request('GET', `${at}/devices/${deviceId}/readings${query}`, { token });

  /** Every reading of the device, paging to the end. */
  async function allReadings(deviceId: string, filters: Record<string, string> = {}): Promise<Record<string, unknown>[]> {
    const found: Record<string, unknown>[] = [];
    let cursor: string | null = null;
    do {
      const params = new URLSearchParams({ ...filters, limit: '100', ...(cursor === null ? {} : { cursor }) });
      const page: HttpResult = await readingsOf(deviceId, `?${params}`);
      expect(page.status, page.text).toBe(200);
      found.push(...page.body.readings);
      cursor = page.body.metadata.nextCursor;
    } while (cursor);
    return found;
  }

  async function newDevice(account = 0, owner = tenant): Promise<Device> {
    return (await createDevice(stack, owner, { account })).device;
  }

  async function getDevice(id: string, owner = tenant): Promise<HttpResult<Device>> {
    return stack.request('GET', `${devicesPath(owner)}/${id}`, { token: owner.token });
  }

  describe('POST /readings', () => {
    it('stores readings by deviceId and by serialNumber and answers them in the API shape', async () => {
      const own = await newDevice();
      const first = nextTime();
      const second = nextTime();
      const response = await ingest([
        {
          deviceId: own.id.toUpperCase(),
          recordedAt: first,
          location: { lat: 51.9496, lng: 4.1453, accuracyMeters: 12, altitudeMeters: -3.5, speedMps: 13.9, headingDegrees: 270 },
          temperatureC: 4.25,
          humidityPercent: 61,
          shockG: 0.4,
          lightLux: 0,
          batteryPercent: 87,
          pressureHpa: 1013.2,
        },
        { serialNumber: own.serialNumber, recordedAt: second, temperatureC: -18 },
      ]);
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ accepted: 2, duplicates: 0, unassigned: 2, rejected: [] });
      const page = await readingsOf(own.id);
      expect(page.status).toBe(200);
      expect(page.body.metadata).toEqual({ nextCursor: null });
      expect(page.body.readings).toEqual([
        {
          id: expect.stringMatching(UUID_V7),
          deviceId: own.id,
          recordedAt: first,
          receivedAt: expect.stringMatching(TIMESTAMP_MS),
          location: { lat: 51.9496, lng: 4.1453, accuracyMeters: 12, altitudeMeters: -3.5, speedMps: 13.9, headingDegrees: 270 },
          temperatureC: 4.25,
          humidityPercent: 61,
          shockG: 0.4,
          lightLux: 0,
          batteryPercent: 87,
          pressureHpa: 1013.2,
        },
        {
          id: expect.stringMatching(UUID_V7),
          deviceId: own.id,
          recordedAt: second,
          receivedAt: expect.stringMatching(TIMESTAMP_MS),
          location: null,
          temperatureC: -18,
          humidityPercent: null,
          shockG: null,
          lightLux: null,
          batteryPercent: null,
          pressureHpa: null,
        },
      ]);
    });

    it('keeps recordedAt to the millisecond: a time given in another zone or with microseconds is the same key', async () => {
      const own = await newDevice();
      const instant = new Date(Math.floor((Date.now() - 7_200_000) / 1000) * 1000 + 123);
      const local = new Date(instant.getTime() + 3_600_000).toISOString().replace('Z', '+01:00').replace('.123', '.123456');
      const response = await ingest([
        { deviceId: own.id, recordedAt: instant.toISOString(), temperatureC: 1 },
        { deviceId: own.id, recordedAt: local, temperatureC: 1 },
      ]);
      expect(response.body).toEqual({ accepted: 1, duplicates: 1, unassigned: 1, rejected: [] });
      expect((await allReadings(own.id)).map((reading) => reading.recordedAt)).toEqual([instant.toISOString()]);
    });

    /** [case, entry, field, issue] for every way an entry itself can be wrong. */
    const ENTRY_CASES: [string, (deviceId: string) => unknown, string, string][] = [
      ['a number instead of an object', () => 42, '', 'InvalidFormat'],
      ['an array instead of an object', () => [], '', 'InvalidFormat'],
      ['null', () => null, '', 'InvalidFormat'],
      ['an unknown field', (id) => ({ deviceId: id, recordedAt: nextTime(), temperatureC: 1, colour: 'red' }), '.colour', 'UnknownField'],
      ['the read-only id', (id) => ({ id: randomUUID(), deviceId: id, recordedAt: nextTime(), temperatureC: 1 }), '.id', 'ReadOnly'],
      ['the read-only receivedAt', (id) => ({ deviceId: id, recordedAt: nextTime(), receivedAt: nextTime(), temperatureC: 1 }), '.receivedAt', 'ReadOnly'],
      ['no recordedAt', (id) => ({ deviceId: id, temperatureC: 1 }), '.recordedAt', 'Required'],
      ['a numeric recordedAt', (id) => ({ deviceId: id, recordedAt: Date.now(), temperatureC: 1 }), '.recordedAt', 'InvalidFormat'],
      ['a recordedAt without a time zone', (id) => ({ deviceId: id, recordedAt: '2026-01-01T00:00:00', temperatureC: 1 }), '.recordedAt', 'InvalidFormat'],
      ['an impossible recordedAt', (id) => ({ deviceId: id, recordedAt: '2026-02-30T00:00:00Z', temperatureC: 1 }), '.recordedAt', 'InvalidFormat'],
      ['a recordedAt before the year 1', (id) => ({ deviceId: id, recordedAt: '0001-01-01T00:00:00+01:00', temperatureC: 1 }), '.recordedAt', 'OutOfRange'],
      ['a recordedAt more than 5 minutes ahead', (id) => ({ deviceId: id, recordedAt: ago(-6 * 60_000), temperatureC: 1 }), '.recordedAt', 'OutOfRange'],
      ['a recordedAt older than the retention', (id) => ({ deviceId: id, recordedAt: ago((RETENTION_DAYS + 0.01) * DAY_MS), temperatureC: 1 }), '.recordedAt', 'OutOfRange'],
      ['neither deviceId nor serialNumber', () => ({ recordedAt: nextTime(), temperatureC: 1 }), '.deviceId', 'Required'],
      ['both deviceId and serialNumber', (id) => ({ deviceId: id, serialNumber: 'SN', recordedAt: nextTime(), temperatureC: 1 }), '.serialNumber', 'InvalidFormat'],
      ['a deviceId that is not a UUID', () => ({ deviceId: 'tracker-1', recordedAt: nextTime(), temperatureC: 1 }), '.deviceId', 'InvalidFormat'],
      ['a numeric deviceId', () => ({ deviceId: 7, recordedAt: nextTime(), temperatureC: 1 }), '.deviceId', 'InvalidFormat'],
      ['an empty serialNumber', () => ({ serialNumber: '', recordedAt: nextTime(), temperatureC: 1 }), '.serialNumber', 'OutOfRange'],
      ['a serialNumber of 101 characters', () => ({ serialNumber: 's'.repeat(101), recordedAt: nextTime(), temperatureC: 1 }), '.serialNumber', 'OutOfRange'],
      ['no measurement', (id) => ({ deviceId: id, recordedAt: nextTime() }), '', 'Required'],
      ['only null measurements', (id) => ({ deviceId: id, recordedAt: nextTime(), location: null, temperatureC: null }), '', 'Required'],
      ['a location without lng', (id) => ({ deviceId: id, recordedAt: nextTime(), location: { lat: 1 } }), '.location.lng', 'Required'],
      ['a location with a null lat', (id) => ({ deviceId: id, recordedAt: nextTime(), location: { lat: null, lng: 1 } }), '.location.lat', 'InvalidFormat'],
      ['a location as a string', (id) => ({ deviceId: id, recordedAt: nextTime(), location: '51.9,4.1' }), '.location', 'InvalidFormat'],
      ['an unknown location field', (id) => ({ deviceId: id, recordedAt: nextTime(), location: { lat: 1, lng: 1, alt: 2 } }), '.location.alt', 'UnknownField'],
      // The misspelt key is named, not the key it stands in for ("lng is required" sent the client looking for lng).
      ['lon instead of lng', (id) => ({ deviceId: id, recordedAt: nextTime(), location: { lat: 1, lon: 1 } }), '.location.lon', 'UnknownField'],
      ['recorded_at instead of recordedAt', (id) => ({ deviceId: id, recorded_at: nextTime(), temperatureC: 1 }), '.recorded_at', 'UnknownField'],
      ['a read-only id without recordedAt', (id) => ({ id, deviceId: id, temperatureC: 1 }), '.id', 'ReadOnly'],
      ['a string temperature', (id) => ({ deviceId: id, recordedAt: nextTime(), temperatureC: '4' }), '.temperatureC', 'InvalidFormat'],
      ['a boolean battery', (id) => ({ deviceId: id, recordedAt: nextTime(), batteryPercent: true }), '.batteryPercent', 'InvalidFormat'],
      ...(
        [
          ['location.lat', -90, 90],
          ['location.lng', -180, 180],
          ['location.accuracyMeters', 0, 100000],
          ['temperatureC', -100, 150],
          ['humidityPercent', 0, 100],
          ['shockG', 0, 1000],
          ['lightLux', 0, 200000],
          ['batteryPercent', 0, 100],
          ['pressureHpa', 300, 1200],
        ] as const
      ).flatMap(([field, min, max]): [string, (deviceId: string) => unknown, string, string][] =>
        [min - 0.001, max + 0.001].map((value) => [
          `${field} = ${value}`,
          (id) => ({ deviceId: id, recordedAt: nextTime(), ...withValue(field, value) }),
          `.${field}`,
          'OutOfRange',
        ]),
      ),
    ];

    function withValue(field: string, value: number): Record<string, unknown> {
      if (!field.startsWith('location.')) return { [field]: value };
      const name = field.slice('location.'.length);
      return { location: { lat: 0, lng: 0, [name]: value } };
    }

    it('judges each entry on its own: every bad field is rejected with its index, field and issue, the others are stored', async () => {
      const own = await newDevice();
      const entries: unknown[] = [];
      const expected: { index: number; field: string; issue: string; name: string }[] = [];
      for (const [name, make, field, issue] of ENTRY_CASES) {
        // A good entry before each bad one, so that indexes are not consecutive by accident.
        entries.push({ deviceId: own.id, recordedAt: nextTime(), temperatureC: entries.length });
        expected.push({ index: entries.length, field: `readings.${entries.length}${field}`, issue, name });
        entries.push(make(own.id));
      }
      // Bounds themselves are accepted.
      entries.push({ deviceId: own.id, recordedAt: nextTime(), location: { lat: -90, lng: 180, accuracyMeters: 0 }, humidityPercent: 100, pressureHpa: 300 });
      const response = await ingest(entries);
      expect(response.status, response.text).toBe(200);
      expect(response.body.accepted).toBe(ENTRY_CASES.length + 1);
      expect(response.body.duplicates).toBe(0);
      const byIndex = new Map((response.body.rejected as { index: number; error: Record<string, unknown> }[]).map((entry) => [entry.index, entry.error]));
      for (const { index, field, issue, name } of expected) {
        expect.soft(byIndex.get(index), name).toEqual({ code: 'InvalidParameter', message: expect.any(String), details: { field, issue } });
      }
      expect(response.body.rejected).toHaveLength(ENTRY_CASES.length);
      // Messages are sentences a person reads, not the schema validator's shorthand ("must be number,null", "<= 150").
      const messageOf = (name: string) => byIndex.get(expected.find((entry) => entry.name === name)!.index)?.message;
      const at = (name: string) => `readings.${expected.find((entry) => entry.name === name)!.index}`;
      expect(messageOf('lon instead of lng')).toBe(
        `${at('lon instead of lng')}.location.lon is not a field of a location; it takes lat, lng, accuracyMeters, altitudeMeters, speedMps, headingDegrees.`,
      );
      expect(messageOf('a string temperature')).toBe(`${at('a string temperature')}.temperatureC must be a number or null.`);
      expect(messageOf('temperatureC = 150.001')).toBe(`${at('temperatureC = 150.001')}.temperatureC must be at most 150.`);
      expect(messageOf('a deviceId that is not a UUID')).toBe(`${at('a deviceId that is not a UUID')}.deviceId must be a UUID.`);
      for (const { error } of response.body.rejected as { error: { message: string } }[]) expect.soft(error.message).not.toMatch(/<=|>=|,null|NOT |must be (number|string|object)\b/);
      expect(await allReadings(own.id)).toHaveLength(ENTRY_CASES.length + 1);
    });

    it('judges an entry with a NUL, a lone surrogate or a __proto__ key on its own: rejected with its field, the batch goes on', async () => {
      const own = await newDevice();
      const good = () => JSON.stringify({ deviceId: own.id, recordedAt: nextTime(), temperatureC: 1 });
      // Spliced in as text: JSON.stringify cannot write an own `__proto__` key, nor a lone surrogate as itself.
      const bad: [string, string, string][] = [
        [`{"serialNumber":"nul\\u0000inside","recordedAt":"${nextTime()}","temperatureC":1}`, 'readings.1.serialNumber', 'InvalidFormat'],
        [`{"serialNumber":"lone \\ud800 high","recordedAt":"${nextTime()}","temperatureC":1}`, 'readings.3.serialNumber', 'InvalidFormat'],
        [`{"deviceId":"${own.id}","recordedAt":"${nextTime()}","temperatureC":1,"__proto__":{"polluted":"yes"}}`, 'readings.5.__proto__', 'UnknownField'],
        [`{"deviceId":"${own.id}","recordedAt":"${nextTime()}","location":{"lat":1,"lng":2,"constructor":{}},"temperatureC":1}`, 'readings.7.location.constructor', 'UnknownField'],
        [`{"deviceId":"${own.id}","recordedAt":"${nextTime()}","temperatureC":1,"key\\u0000":1}`, 'readings.9', 'InvalidFormat'],
      ];
      const raw = `{"readings":[${bad.flatMap(([entry]) => [good(), entry]).join(',')},${good()}]}`;
      const response = await stack.request('POST', `${base}/readings`, { token: tenant.token, rawBody: raw, headers: { 'content-type': 'application/json' } });
      expect(response.status, response.text).toBe(200);
      expect(response.body.accepted).toBe(bad.length + 1);
      expect(response.body.rejected).toEqual(
        bad.map(([, field, issue], i) => ({ index: 2 * i + 1, error: { code: 'InvalidParameter', message: expect.any(String), details: { field, issue } } })),
      );
      expect(await allReadings(own.id)).toHaveLength(bad.length + 1);
      expect(Object.prototype).not.toHaveProperty('polluted');
    });

    it("rejects unknown, retired and other accounts' devices entry by entry (DeviceNotExists, DeviceRetired)", async () => {
      const own = await newDevice();
      const retired = await newDevice();
      expect((await stack.request('POST', `${devicesPath(tenant)}/${retired.id}/retire`, { token: tenant.token })).status).toBe(204);
      const sibling = await newDevice(1);
      const foreign = await newDevice(0, other);
      const response = await ingest([
        { deviceId: randomUUID(), recordedAt: nextTime(), temperatureC: 1 },
        { serialNumber: 'NO-SUCH-SERIAL', recordedAt: nextTime(), temperatureC: 1 },
        { deviceId: retired.id, recordedAt: nextTime(), temperatureC: 1 },
        { serialNumber: retired.serialNumber, recordedAt: nextTime(), temperatureC: 1 },
        { deviceId: sibling.id, recordedAt: nextTime(), temperatureC: 1 },
        { serialNumber: sibling.serialNumber, recordedAt: nextTime(), temperatureC: 1 },
        { deviceId: foreign.id, recordedAt: nextTime(), temperatureC: 1 },
        { serialNumber: foreign.serialNumber, recordedAt: nextTime(), temperatureC: 1 },
        { deviceId: own.id, recordedAt: nextTime(), temperatureC: 1 },
      ]);
      expect(response.status).toBe(200);
      expect(response.body.accepted).toBe(1);
      expect(response.body.rejected.map((entry: { index: number; error: { code: string } }) => [entry.index, entry.error.code])).toEqual([
        [0, 'DeviceNotExists'],
        [1, 'DeviceNotExists'],
        [2, 'DeviceRetired'],
        [3, 'DeviceRetired'],
        [4, 'DeviceNotExists'],
        [5, 'DeviceNotExists'],
        [6, 'DeviceNotExists'],
        [7, 'DeviceNotExists'],
      ]);
      // Messages a person reads: no double negative.
      expect(response.body.rejected[1].error.message).toBe('No device with serial number "NO-SUCH-SERIAL" exists in this account.');
      expect(response.body.rejected[0].error.message).toMatch(/^Device [0-9a-f-]{36} does not exist in this account\.$/);
      for (const id of [retired.id]) expect(await allReadings(id)).toEqual([]);
      const siblingReadings = await readingsOf(sibling.id, '', tenant.token, `/v1/accounts/${tenant.accountIds[1]}`);
      expect(siblingReadings.body.readings).toEqual([]);
      const foreignReadings = await readingsOf(foreign.id, '', other.token, `/v1/accounts/${other.accountIds[0]}`);
      expect(foreignReadings.body.readings).toEqual([]);
    });

    it('counts a repeat with the same content as a duplicate, within a batch and across batches; other content is ConflictingReading', async () => {
      const own = await newDevice();
      const [a, b] = [nextTime(), nextTime()];
      const reading = { deviceId: own.id, recordedAt: a, temperatureC: 3.5, location: { lat: 1, lng: 2 } };
      const first = await ingest([reading, { ...reading }, { ...reading, temperatureC: 3.6 }, { deviceId: own.id, recordedAt: b, shockG: 1 }]);
      expect(first.body.accepted).toBe(2);
      expect(first.body.duplicates).toBe(1);
      expect(first.body.rejected).toEqual([
        { index: 2, error: { code: 'InvalidParameter', message: expect.stringContaining('entry 0'), details: { field: 'readings.2.recordedAt', issue: 'ConflictingReading' } } },
      ]);
      // The whole batch again (a client retrying after a timeout): nothing is stored twice.
      const again = await ingest([reading, { ...reading }, { ...reading, temperatureC: 3.6 }, { deviceId: own.id, recordedAt: b, shockG: 1 }]);
      expect(again.body.accepted).toBe(0);
      expect(again.body.duplicates).toBe(3);
      expect(again.body.rejected.map((entry: { index: number }) => entry.index)).toEqual([2]);
      // By serial number too; and a missing measurement is other content.
      const bySerial = await ingest([
        { serialNumber: own.serialNumber, recordedAt: a, temperatureC: 3.5, location: { lat: 1, lng: 2 } },
        { serialNumber: own.serialNumber, recordedAt: a, temperatureC: 3.5 },
        { deviceId: own.id, recordedAt: b, shockG: 1, lightLux: 0 },
      ]);
      expect(bySerial.body.accepted).toBe(0);
      expect(bySerial.body.duplicates).toBe(1);
      expect(bySerial.body.rejected.map((entry: { index: number; error: { details: { issue: string } } }) => [entry.index, entry.error.details.issue])).toEqual([
        [1, 'ConflictingReading'],
        [2, 'ConflictingReading'],
      ]);
      // Part stored before, part new: only the new one is accepted and stored.
      const c = nextTime();
      const mixed = await ingest([{ deviceId: own.id, recordedAt: c, shockG: 2 }, reading, { deviceId: own.id, recordedAt: b, shockG: 3 }]);
      expect(mixed.body.accepted).toBe(1);
      expect(mixed.body.duplicates).toBe(1);
      expect(mixed.body.rejected.map((entry: { index: number }) => entry.index)).toEqual([2]);
      const stored = await allReadings(own.id);
      expect(stored.map((r) => [r.recordedAt, r.temperatureC, r.shockG])).toEqual([
        [a, 3.5, null],
        [b, null, 1],
        [c, null, 2],
      ]);
    });

    it('says how many accepted readings reached no shipment (unassigned): recorded before the assignment, after the release, or never assigned', async () => {
      const own = await newDevice();
      const loose = await newDevice();
      const shipment = await createShipment(stack, tenant);
      const { set } = await createSet(stack, tenant, shipment.id);
      const before = Date.now() - 60_000;
      const assignedAt = await assignDevice(stack, tenant, set, own.id);
      const inPeriod = await clockPast(assignedAt);
      const during = [inPeriod, await clockPast(inPeriod)];
      const at = (t: number) => new Date(t).toISOString();
      const first = await ingest([
        { deviceId: own.id, recordedAt: at(before), temperatureC: 1 },
        { deviceId: own.id, recordedAt: at(during[0]!), temperatureC: 2 },
        { deviceId: own.id, recordedAt: at(during[1]!), temperatureC: 3 },
        { deviceId: loose.id, recordedAt: at(during[0]!), temperatureC: 4 },
        // Neither a duplicate nor a rejected entry counts: only accepted readings are assigned or not.
        { deviceId: own.id, recordedAt: at(before), temperatureC: 1 },
        { deviceId: own.id, recordedAt: at(during[0]!), temperatureC: 9 },
        { deviceId: randomUUID(), recordedAt: at(before), temperatureC: 1 },
      ]);
      expect(first.status, first.text).toBe(200);
      expect(first.body).toMatchObject({ accepted: 4, duplicates: 1, unassigned: 2 });
      expect(first.body.rejected.map((entry: { index: number }) => entry.index)).toEqual([5, 6]);

      await unassignDevice(stack, tenant, set, own.id);
      const released = await clockPast(Date.now());
      // Late readings of the period still reach the shipment; those after the release do not.
      const second = await ingest([
        { deviceId: own.id, recordedAt: at(during[1]! + 1), temperatureC: 5 },
        { deviceId: own.id, recordedAt: at(released + 1), temperatureC: 6 },
      ]);
      expect(second.body).toEqual({ accepted: 2, duplicates: 0, unassigned: 1, rejected: [] });
      // Resent, everything is a duplicate: nothing is accepted, so nothing is unassigned.
      expect((await ingest([{ deviceId: own.id, recordedAt: at(released + 1), temperatureC: 6 }])).body).toEqual({
        accepted: 0,
        duplicates: 1,
        unassigned: 0,
        rejected: [],
      });
    });

    it('takes 5000 entries and refuses 5001 (and none) as a whole, storing nothing', async () => {
      const own = await newDevice();
      const start = Date.now() - 2 * 3_600_000;
      const batch = (count: number) => Array.from({ length: count }, (_, i) => ({ deviceId: own.id, recordedAt: new Date(start + i).toISOString(), temperatureC: i % 50 }));
      const tooMany = await ingest(batch(5001));
      expectInvalidParameter(tooMany, 'readings', 'OutOfRange');
      expectInvalidParameter(await ingest([]), 'readings', 'OutOfRange');
      expect(await allReadings(own.id)).toEqual([]);
      const full = await ingest(batch(5000));
      expect(full.status, full.text).toBe(200);
      expect(full.body).toEqual({ accepted: 5000, duplicates: 0, unassigned: 5000, rejected: [] });
      const count = await dms.query('SELECT count(*)::int AS n FROM readings WHERE device_id = $1', [own.id]);
      expect(count.rows[0].n).toBe(5000);
    });

    it('takes a body of almost 4 MiB, far above NATS max_payload, and refuses one above 4 MiB with 413', async () => {
      const devices = await Promise.all(Array.from({ length: 5 }, () => newDevice()));
      const start = Date.now() - 3 * 3_600_000;
      // Long, multi-byte serial numbers make each entry large also in the message to the DMS.
      const serials = devices.map((d) => d.serialNumber);
      const entry = (i: number) => ({
        serialNumber: serials[i % serials.length],
        recordedAt: new Date(start + i).toISOString(),
        location: { lat: 51.12345678901234, lng: 4.12345678901234, accuracyMeters: 12.123456789012344, altitudeMeters: 1.123456789012345, speedMps: 3.123456789012345, headingDegrees: 123.12345678901234 },
        temperatureC: 4.123456789012345,
        humidityPercent: 61.12345678901234,
        shockG: 0.123456789012345,
        lightLux: 100.12345678901234,
        batteryPercent: 87.12345678901234,
        pressureHpa: 1013.1234567890123,
      });
      const entries = Array.from({ length: 5000 }, (_, i) => entry(i));
      let text = JSON.stringify({ readings: entries });
      // Padding (white space is valid JSON) brings the body to just under 4 MiB.
      const limit = 4 * 1024 * 1024;
      text = text.replace('{"readings":', `{${' '.repeat(limit - text.length - 16)}"readings":`);
      expect(Buffer.byteLength(text)).toBeLessThanOrEqual(limit);
      const accepted = await stack.request('POST', `${base}/readings`, { token: tenant.token, rawBody: text, headers: { 'content-type': 'application/json' } });
      expect(accepted.status, accepted.text.slice(0, 300)).toBe(200);
      // Summed over the DMS chunks the batch was sent in.
      expect(accepted.body).toEqual({ accepted: 5000, duplicates: 0, unassigned: 5000, rejected: [] });
      const tooLarge = `{${' '.repeat(limit - text.length + 32)}${text.slice(1)}`;
      const refused = await stack.request('POST', `${base}/readings`, { token: tenant.token, rawBody: tooLarge, headers: { 'content-type': 'application/json' } });
      expectError(refused, 413, 'PayloadTooLarge');
    });

    it('refuses a malformed envelope as a whole with one 400', async () => {
      const post = (body: unknown) => stack.request('POST', `${base}/readings`, { token: tenant.token, body });
      expectError(await post([{ deviceId: device.id }]), 400, 'MalformedRequest');
      expectInvalidParameter(await post({}), 'readings', 'Required');
      expectInvalidParameter(await post({ readings: {} }), 'readings', 'InvalidFormat');
      expectInvalidParameter(await post({ readings: [{ deviceId: device.id, recordedAt: nextTime(), temperatureC: 1 }], extra: 1 }), 'extra', 'UnknownField');
      const broken = await stack.request('POST', `${base}/readings`, { token: tenant.token, rawBody: '{"readings": [', headers: { 'content-type': 'application/json' } });
      expectError(broken, 400, 'MalformedRequest');
      expect(await allReadings(device.id)).toEqual([]);
    });
  });

  describe('last known fields of the device', () => {
    it('come from the newest reading carrying each, by recordedAt: a late, older reading never moves them back', async () => {
      const own = await newDevice();
      const before = await getDevice(own.id);
      const [t1, t2, t3] = [ago(50_000), ago(40_000), ago(30_000)];
      await ingest([{ deviceId: own.id, recordedAt: t2, location: { lat: 2, lng: 2, accuracyMeters: 5 }, batteryPercent: 50 }]);
      let found = (await getDevice(own.id)).body;
      expect([found.lastSeenAt, found.lastLocation, found.batteryLevel]).toEqual([t2, { lat: 2, lng: 2, accuracyMeters: 5, recordedAt: t2 }, 50]);
      // Late and older: stored, but moves nothing.
      const late = await ingest([{ deviceId: own.id, recordedAt: t1, location: { lat: 1, lng: 1 }, batteryPercent: 90 }]);
      expect(late.body.accepted).toBe(1);
      found = (await getDevice(own.id)).body;
      expect([found.lastSeenAt, found.lastLocation, found.batteryLevel]).toEqual([t2, { lat: 2, lng: 2, accuracyMeters: 5, recordedAt: t2 }, 50]);
      // Newer, without a location or a battery level: only lastSeenAt moves. In one batch, the newest wins whatever the order.
      const t4 = ago(20_000);
      await ingest([
        { deviceId: own.id, recordedAt: t4, batteryPercent: 40 },
        { deviceId: own.id, recordedAt: t3, temperatureC: 5, batteryPercent: 45, location: { lat: 3, lng: 3 } },
      ]);
      const after = await getDevice(own.id);
      found = after.body;
      expect([found.lastSeenAt, found.lastLocation, found.batteryLevel]).toEqual([t4, { lat: 3, lng: 3, accuracyMeters: null, recordedAt: t3 }, 40]);
      // Derived fields change neither updatedAt nor the version.
      expect(found.updatedAt).toBe(before.body.updatedAt);
      expect(after.headers.get('etag')).toBe(before.headers.get('etag'));
      // The device list shows the same (its stored JSON is written by the database).
      const listed = await stack.request('GET', `${devicesPath(tenant)}?serialNumber=${encodeURIComponent(own.serialNumber)}`, { token: tenant.token });
      expect(listed.body.devices).toEqual([found]);
    });

    it('move only with readings stored by the batch: a duplicate or a conflicting entry moves nothing', async () => {
      const own = await newDevice();
      const [t1, t2] = [ago(40_000), ago(30_000)];
      await ingest([{ deviceId: own.id, recordedAt: t1, location: { lat: 1, lng: 1 }, batteryPercent: 60 }]);
      await ingest([{ deviceId: own.id, recordedAt: t2, temperatureC: 4 }]);
      const known = [t2, { lat: 1, lng: 1, accuracyMeters: null, recordedAt: t1 }, 60];
      let found = (await getDevice(own.id)).body;
      expect([found.lastSeenAt, found.lastLocation, found.batteryLevel]).toEqual(known);
      // The key of t2 again: with the same content a duplicate, then with a location and a battery level a
      // conflict, refused; neither moves anything, in the same batch or the next.
      const again = await ingest([
        { deviceId: own.id, recordedAt: t2, temperatureC: 4 },
        { deviceId: own.id, recordedAt: t2, temperatureC: 4, location: { lat: 9, lng: 9 }, batteryPercent: 10 },
      ]);
      expect([again.body.accepted, again.body.duplicates, again.body.rejected.map((r: { index: number }) => r.index)]).toEqual([0, 1, [1]]);
      const alone = await ingest([{ deviceId: own.id, recordedAt: t2, location: { lat: 9, lng: 9 }, batteryPercent: 10 }]);
      expect([alone.body.accepted, alone.body.rejected.map((r: { index: number }) => r.index)]).toEqual([0, [0]]);
      found = (await getDevice(own.id)).body;
      expect([found.lastSeenAt, found.lastLocation, found.batteryLevel]).toEqual(known);
    });

    it('leave the stored JSON as formatting the device whole writes it, whatever its text holds', async () => {
      // Text that counts differently in characters and in bytes, quotes, and the marks the database cuts the
      // stored JSON at, inside strings, keys and the metadata.
      const awkward = ',"batteryLevel": ✓ ,"metadata": "ü"\n';
      const created = await createDevice(stack, tenant, {
        body: { serialNumber: `${uniqueSerialNumber()}-ßü✓"`, model: awkward, firmwareVersion: 'β ,"metadata":', metadata: { [awkward]: awkward, metadata: ',"batteryLevel":1', batteryLevel: 1.5 } },
      });
      const id = created.device.id;
      const stored = async () => (await dms.query('SELECT api_json FROM devices WHERE id = $1', [id])).rows[0].api_json as string;
      // What the whole formatting writes for the same row: a NULL asks the trigger for it.
      const whole = async () => (await dms.query('UPDATE devices SET api_json = NULL WHERE id = $1 RETURNING api_json', [id])).rows[0].api_json as string;
      const batches = [
        [{ deviceId: id, recordedAt: ago(50_000), temperatureC: 3 }],
        [{ deviceId: id, recordedAt: ago(40_000), location: { lat: 51.123456789, lng: -0.000001, accuracyMeters: 4.5 }, batteryPercent: 77.7 }],
        [{ deviceId: id, recordedAt: ago(30_000), location: { lat: -33.9, lng: 151.2 } }],
        [{ deviceId: id, recordedAt: ago(20_000), batteryPercent: 0 }],
      ];
      for (const batch of batches) {
        expect((await ingest(batch)).body.accepted).toBe(1);
        const moved = await stored();
        expect(moved).toBe(await whole());
        expect(JSON.parse(moved)).toEqual((await getDevice(id)).body);
      }
      expect(JSON.parse(await stored())).toMatchObject({ model: awkward, lastLocation: { lat: -33.9, lng: 151.2, accuracyMeters: null }, batteryLevel: 0 });

      // A text the trigger did not write (stored with triggers off): a second metadata mark, or no battery
      // mark, fails its checks, and the next batch formats the text whole.
      const tampered: [string, (text: string) => boolean][] = [
        [`replace(api_json, ',"createdAt":', ',"metadata":0,"createdAt":')`, (text) => text.split(',"metadata":').length === 3],
        [`replace(api_json, ',"batteryLevel":', ',"battery":')`, (text) => !text.includes(',"batteryLevel":')],
      ];
      for (const [i, [change, isTampered]] of tampered.entries()) {
        await dms.query(`BEGIN; SET LOCAL session_replication_role = replica; UPDATE devices SET api_json = ${change} WHERE id = '${id}'; COMMIT`);
        expect(isTampered(await stored())).toBe(true);
        expect((await ingest([{ deviceId: id, recordedAt: ago(10_000 - i * 1000), batteryPercent: 50 + i }])).body.accepted).toBe(1);
        const moved = await stored();
        expect(isTampered(moved)).toBe(false);
        expect(moved).toBe(await whole());
        expect(JSON.parse(moved)).toMatchObject({ batteryLevel: 50 + i });
      }
    });

    it('treat a value a client sets as known when it was set: older readings leave it, newer ones replace it', async () => {
      const own = await newDevice();
      const patched = await stack.request('PATCH', `${devicesPath(tenant)}/${own.id}`, {
        token: tenant.token,
        body: { lastLocation: { lat: 10, lng: 10 }, batteryLevel: 70 },
      });
      expect(patched.status).toBe(200);
      const setAt: string = patched.body.lastLocation.recordedAt;
      expect(patched.body.lastLocation).toEqual({ lat: 10, lng: 10, accuracyMeters: null, recordedAt: expect.stringMatching(TIMESTAMP_MS) });
      expect(Math.abs(Date.parse(setAt) - Date.parse(patched.body.updatedAt))).toBeLessThan(1000);
      await ingest([{ deviceId: own.id, recordedAt: ago(60_000), location: { lat: 1, lng: 1 }, batteryPercent: 5 }]);
      let found = (await getDevice(own.id)).body;
      expect([found.lastLocation?.lat, found.batteryLevel]).toEqual([10, 70]);
      const newer = new Date(Date.parse(setAt) + 1).toISOString();
      await ingest([{ deviceId: own.id, recordedAt: newer, location: { lat: 1, lng: 1 }, batteryPercent: 5 }]);
      found = (await getDevice(own.id)).body;
      expect([found.lastLocation, found.batteryLevel]).toEqual([{ lat: 1, lng: 1, accuracyMeters: null, recordedAt: newer }, 5]);
    });
  });

  describe('GET /devices/{id}/readings', () => {
    it('filters on recordedAt, half-open, and refuses bad filters', async () => {
      const own = await newDevice();
      const times = Array.from({ length: 5 }, () => nextTime());
      // Stored out of recordedAt order: the page follows the stored order.
      await ingest([3, 1, 4, 0, 2].map((i) => ({ deviceId: own.id, recordedAt: times[i], temperatureC: i })));
      const window = await allReadings(own.id, { from: times[1]!, to: times[3]! });
      expect(window.map((r) => r.temperatureC)).toEqual([1, 2]);
      expect((await allReadings(own.id)).map((r) => r.temperatureC)).toEqual([3, 1, 4, 0, 2]);
      expectInvalidParameter(await readingsOf(own.id, '?from=yesterday'), 'from', 'InvalidFormat');
      expectInvalidParameter(await readingsOf(own.id, `?from=${times[3]}&to=${times[1]}`), 'to', 'OutOfRange');
      expectInvalidParameter(await readingsOf(own.id, '?limit=101'), 'limit', 'OutOfRange');
      expectInvalidParameter(await readingsOf(own.id, '?colour=red'), 'colour', 'UnknownField');
      const first = await readingsOf(own.id, '?limit=2&includeTotal=true');
      expect(first.body.metadata.total).toBe(5);
      // A cursor is bound to its filters.
      expectInvalidParameter(await readingsOf(own.id, `?limit=2&from=${times[0]}&cursor=${first.body.metadata.nextCursor}`), 'cursor', 'InvalidCursor');
    });

    it("answers 404 DeviceNotExists for another account's or tenant's device, and for an unknown id", async () => {
      const sibling = await newDevice(1);
      const foreign = await newDevice(0, other);
      await ingest([{ deviceId: sibling.id, recordedAt: nextTime(), temperatureC: 1 }], tenant.token, `/v1/accounts/${tenant.accountIds[1]}`);
      for (const id of [sibling.id, foreign.id, randomUUID(), 'not-a-uuid']) expectError(await readingsOf(id), 404, 'DeviceNotExists');
    });

    it('pages in stored order so that a client paging while readings arrive sees each reading exactly once', async () => {
      const own = await newDevice();
      const initial = Array.from({ length: 60 }, () => ({ deviceId: own.id, recordedAt: nextTime(), temperatureC: 1 }));
      await ingest(initial);
      let writing = true;
      const written: string[] = [];
      const writers = [0, 1, 2].map(async (w) => {
        let n = 0;
        while (writing) {
          // Late readings too: recordedAt goes backwards, but storage order is what pages follow.
          const recordedAt = new Date(Date.now() - 3_600_000 - w * 600_000 - (n++ * 997) % 500_000).toISOString();
          const response = await ingest([{ deviceId: own.id, recordedAt, temperatureC: w }]);
          if (response.body.accepted === 1) written.push(recordedAt);
        }
      });
      // The writers are under way before the first page.
      const deadline = Date.now() + 10_000;
      while (written.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      const seen: string[] = [];
      let cursor: string | null = null;
      let writtenBeforeLastPage: string[];
      do {
        writtenBeforeLastPage = [...written];
        const page: HttpResult = await readingsOf(own.id, `?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(page.status).toBe(200);
        seen.push(...page.body.readings.map((r: { recordedAt: string }) => r.recordedAt));
        cursor = page.body.metadata.nextCursor;
      } while (cursor);
      writing = false;
      await Promise.all(writers);
      expect(new Set(seen).size).toBe(seen.length);
      for (const reading of initial) expect(seen).toContain(reading.recordedAt);
      for (const recordedAt of writtenBeforeLastPage) expect(seen).toContain(recordedAt);
      expect(writtenBeforeLastPage.length).toBeGreaterThan(0);
    });
  });

  describe('roles', () => {
    it('lets Ingest send readings and nothing else; Operator sends and reads; Viewer reads only', async () => {
      const ingestApp = await stack.identity.createApplication(tenant.tenantId, 'Device cloud', 'Ingest', '*');
      const token = await issueFor(ingestApp);
      const reading = () => [{ deviceId: device.id, recordedAt: nextTime(), temperatureC: 2 }];
      expect((await ingest(reading(), token)).body.accepted).toBe(1);
      expectError(await readingsOf(device.id, '', token), 403, 'Forbidden');
      expectError(await stack.request('GET', devicesPath(tenant), { token }), 403, 'Forbidden');
      expectError(await stack.request('GET', `${devicesPath(tenant)}/${device.id}`, { token }), 403, 'Forbidden');
      expectError(await stack.request('POST', devicesPath(tenant), { token, body: { serialNumber: 'INGEST-1', model: 'M' } }), 403, 'Forbidden');
      expectError(await stack.request('POST', `${base}/shipments`, { token, body: { name: 'x' } }), 403, 'Forbidden');
      expectError(await stack.request('POST', `${devicesPath(tenant)}/bulk-retire`, { token, body: { deviceIds: [device.id] } }), 403, 'Forbidden');

      const operator = await issueFor(await stack.identity.createApplication(tenant.tenantId, 'Operator', 'Operator', '*'));
      expect((await ingest(reading(), operator)).body.accepted).toBe(1);
      expect((await readingsOf(device.id, '', operator)).status).toBe(200);

      const viewer = await issueFor(await stack.identity.createApplication(tenant.tenantId, 'Viewer', 'Viewer', '*'));
      expectError(await ingest(reading(), viewer), 403, 'Forbidden');
      expect((await readingsOf(device.id, '', viewer)).status).toBe(200);

      // An Ingest role on one account only: the other account is Forbidden.
      const narrow = await issueFor(await stack.identity.createApplication(tenant.tenantId, 'Narrow cloud', 'Ingest', [tenant.accountIds[1]!]));
      expectError(await ingest(reading(), narrow), 403, 'Forbidden');
      expect(await allReadings(device.id)).toHaveLength(2);
    });

    async function issueFor(app: { applicationId: string; applicationSecret: string }): Promise<string> {
      const response = await stack.request('POST', '/v1/applications/token', { body: { tenantId: tenant.tenantId, ...app } });
      expect(response.status).toBe(200);
      return response.body.accessToken as string;
    }
  });

  describe('rate limit of readings', () => {
    it('counts each entry against the tenant; a batch over the limit gets 429 whole with Retry-After and nothing is stored', async () => {
      // Tenants of their own: the buckets live in the Redis every gateway of the stack shares.
      const [limitedTenant, neighbour] = [await createTenant(stack), await createTenant(stack)];
      const limited = await stack.startGatewayReplica({ RATE_LIMIT_READINGS: '100/1m burst 150' });
      const own = await newDevice(0, limitedTenant);
      const at = `/v1/accounts/${limitedTenant.accountIds[0]}`;
      const batch = (count: number, deviceId = own.id) =>
        Array.from({ length: count }, () => ({ deviceId, recordedAt: nextTime(), temperatureC: 1 }));
      const count = async () => (await dms.query('SELECT count(*)::int AS n FROM readings WHERE device_id = $1', [own.id])).rows[0].n;
      const first = await ingest(batch(100), limitedTenant.token, at, limited);
      expect(first.status).toBe(200);
      expect(first.headers.get('ratelimit-policy')).toContain('"readings";q=100;w=60;tracking-burst=150');
      // A batch of 60, also with bad entries, against the 50 left: refused whole.
      const over = await ingest([...batch(55), ...Array.from({ length: 5 }, () => ({ deviceId: own.id }))], limitedTenant.token, at, limited);
      expectError(over, 429, 'RateLimitExceeded', { policy: 'readings' });
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await count()).toBe(100);
      // What is left of the burst still passes, and another tenant has its own budget.
      expect((await ingest(batch(50), limitedTenant.token, at, limited)).status).toBe(200);
      const neighbourDevice = await newDevice(0, neighbour);
      const neighbourBatch = batch(150, neighbourDevice.id);
      expect((await ingest(neighbourBatch, neighbour.token, `/v1/accounts/${neighbour.accountIds[0]}`, limited)).status).toBe(200);
      expect(await count()).toBe(150);
    });

    it('applies a per-tenant override', async () => {
      const third = await createTenant(stack);
      const limited = await stack.startGatewayReplica({
        RATE_LIMIT_TENANT_OVERRIDES: JSON.stringify({ [third.tenantId]: { readings: '5/1m' } }),
      });
      const own = await newDevice(0, third);
      const at = `/v1/accounts/${third.accountIds[0]}`;
      const batch = (count: number) => Array.from({ length: count }, () => ({ deviceId: own.id, recordedAt: nextTime(), temperatureC: 1 }));
      const allowed = await ingest(batch(5), third.token, at, limited);
      expect(allowed.status).toBe(200);
      expect(allowed.headers.get('ratelimit-policy')).toContain('"readings";q=5;w=60;tracking-burst=5');
      expectError(await ingest(batch(1), third.token, at, limited), 429, 'RateLimitExceeded', { policy: 'readings' });
      // The tenant without an override keeps the configured limit on the same gateway.
      expect((await ingest(batch(0).concat([{ deviceId: device.id, recordedAt: nextTime(), temperatureC: 1 }]), tenant.token, base, limited)).status).toBe(200);
    });
  });

  describe('publication on JetStream', () => {
    const prefix = () => stack.env.NATS_SUBJECT_PREFIX!;

    /** Every message of the readings stream: subject, message id and body. */
    async function published(): Promise<{ subject: string; msgId: string | undefined; body: Record<string, unknown> }[]> {
      const nats = await connectTestNats();
      try {
        const jsm = await jetstreamManager(nats);
        const name = jetStreamName(prefix(), 'READINGS');
        const { state } = await jsm.streams.info(name);
        const messages = [];
        for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
          const message = await jsm.streams.getMessage(name, { seq });
          if (message) messages.push({ subject: message.subject, msgId: message.header?.get('Nats-Msg-Id'), body: message.json<Record<string, unknown>>() });
        }
        return messages;
      } finally {
        await nats.close();
      }
    }

    async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const value = await read().catch(() => undefined);
        if (value !== undefined && done(value)) return value;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }

    it('publishes each accepted batch once: one message, the stored readings grouped by device, without their null fields', async () => {
      const [a, b] = [await newDevice(), await newDevice()];
      const before = (await until(() => streamMessages(prefix(), 'READINGS'), () => true, 'the stream')) ?? 0;
      const times = [nextTime(), nextTime(), nextTime()];
      const batch = [
        { deviceId: a.id, recordedAt: times[1], temperatureC: 2 },
        { deviceId: b.id, recordedAt: times[0], location: { lat: 1, lng: 2, accuracyMeters: 0, headingDegrees: 359.5 }, shockG: 0, pressureHpa: 1013.25 },
        { deviceId: a.id, recordedAt: times[0], temperatureC: 1 },
        { deviceId: a.id, recordedAt: times[0], temperatureC: 1 },
        { deviceId: a.id, recordedAt: times[2], temperatureC: 999 },
      ];
      expect((await ingest(batch)).body).toMatchObject({ accepted: 3, duplicates: 1 });
      const messages = (await until(published, (all) => all.length >= before + 1, 'the message')).slice(before);
      expect(messages).toHaveLength(1);
      const [message] = messages;
      const inOrder = (readings: Record<string, unknown>[]) => readings.sort((x, y) => String(x.recordedAt).localeCompare(String(y.recordedAt)));
      const storedA = inOrder(await allReadings(a.id));
      const storedB = inOrder(await allReadings(b.id));
      // As stored and read back, without deviceId (the group's), receivedAt (the message's) and null fields.
      const withoutNulls = (value: Record<string, unknown>) => Object.fromEntries(Object.entries(value).filter(([, field]) => field !== null));
      const asPublished = (readings: Record<string, unknown>[]) =>
        readings.map(({ deviceId: _device, receivedAt: _received, location, ...rest }) => ({
          ...withoutNulls(rest),
          ...(location ? { location: withoutNulls(location as Record<string, unknown>) } : {}),
        }));
      // On no shipment: the partition `none` (readings of a shipment go on its partition, `readingsPartitionOf`).
      expect(message!.subject).toBe(`${prefix()}readings.${tenant.tenantId}.${tenant.accountIds[0]}.none`);
      expect(message!.msgId).toMatch(UUID_V7);
      expect(message!.body).toEqual({
        tenantId: tenant.tenantId,
        accountId: tenant.accountIds[0],
        receivedAt: storedA[0]!.receivedAt,
        // Devices in the order of their first accepted entry; on no shipment.
        devices: [
          { deviceId: a.id, shipmentId: null, readings: asPublished(storedA) },
          { deviceId: b.id, shipmentId: null, readings: asPublished(storedB) },
        ],
      });
      expect(new Set([...storedA, ...storedB].map((reading) => reading.receivedAt)).size).toBe(1);
      // The same batch again stores nothing and publishes nothing.
      expect((await ingest(batch)).body).toMatchObject({ accepted: 0, duplicates: 4 });
      const marker = await newDevice();
      await ingest([{ deviceId: marker.id, recordedAt: nextTime(), temperatureC: 1 }]);
      const deviceIds = (m: { body: Record<string, unknown> }) => (m.body.devices as { deviceId: string }[]).map((group) => group.deviceId);
      const after = (await until(published, (all) => all.some((m) => deviceIds(m).includes(marker.id)), 'the marker')).slice(before);
      expect(after.map(deviceIds)).toEqual([[a.id, b.id], [marker.id]]);
    });

    it('splits a large batch over several messages, each under 1 MiB, a device’s group continuing in the next', async () => {
      const [a, b] = [await newDevice(), await newDevice()];
      const before = (await published()).length;
      const entry = (deviceId: string) => ({
        deviceId,
        recordedAt: nextTime(),
        location: { lat: 51.123456789, lng: 4.123456789, accuracyMeters: 12.5, altitudeMeters: 3.25, speedMps: 12.5, headingDegrees: 270.5 },
        temperatureC: 4.125,
        humidityPercent: 55.5,
      });
      const batch = [...Array.from({ length: 2500 }, () => entry(a.id)), ...Array.from({ length: 2500 }, () => entry(b.id))];
      expect((await ingest(batch)).body).toMatchObject({ accepted: 5000, rejected: [] });
      const groups = (all: Awaited<ReturnType<typeof published>>) =>
        all.slice(before).flatMap((m) => m.body.devices as { deviceId: string; readings: { recordedAt: string }[] }[]);
      const count = (all: Awaited<ReturnType<typeof published>>) => groups(all).reduce((sum, group) => sum + group.readings.length, 0);
      const all = await until(published, (found) => count(found) >= 5000, 'every reading');
      const mine = all.slice(before);
      expect(count(all)).toBe(5000);
      expect(mine.length).toBeGreaterThan(1);
      for (const message of mine) expect(Buffer.byteLength(JSON.stringify(message.body))).toBeLessThan(1024 * 1024);
      const times = (deviceId: string) => groups(all).filter((group) => group.deviceId === deviceId).flatMap((group) => group.readings.map((r) => r.recordedAt));
      expect(times(a.id)).toEqual(batch.slice(0, 2500).map((e) => e.recordedAt));
      expect(times(b.id)).toEqual(batch.slice(2500).map((e) => e.recordedAt));
    });

    it('publishes what a DMS committed and could not publish (its relay down or killed) once a relay runs again', async () => {
      const own = await newDevice();
      const before = (await published()).length;
      await stack.stopDmsReplicas();
      stack.env.OUTBOX_RELAY_ENABLED = 'false';
      try {
        await stack.startDmsReplica();
      } finally {
        delete stack.env.OUTBOX_RELAY_ENABLED;
      }
      const recordedAt = nextTime();
      expect((await ingest([{ deviceId: own.id, recordedAt, temperatureC: 3 }])).body.accepted).toBe(1);
      const waiting = await dms.query('SELECT count(*)::int AS n FROM outbox');
      expect(waiting.rows[0].n).toBeGreaterThanOrEqual(1);
      expect((await published()).length).toBe(before);
      await stack.stopDmsReplicas();
      await stack.startDmsReplica();
      const messages = await until(published, (all) => all.length > before, 'the relay');
      const groups = messages.slice(before).flatMap((m) => m.body.devices as { deviceId: string; readings: { recordedAt: string }[] }[]);
      expect(groups.map((group) => [group.deviceId, group.readings.map((r) => r.recordedAt)])).toEqual([[own.id, [recordedAt]]]);
      // The relay deletes what it published once the stream has acknowledged it: a moment after the message is there.
      await until(async () => (await dms.query('SELECT count(*)::int AS n FROM outbox')).rows[0].n as number, (n) => n === 0, 'the published rows leaving the outbox');
    });
  });

  describe('retention', () => {
    it('drops whole partitions past READINGS_RETENTION_DAYS, never rows, and keeps the newer ones', async () => {
      const own = await newDevice();
      const old = ago((RETENTION_DAYS - 0.5) * DAY_MS);
      const recent = ago(60_000);
      const stored = await ingest([
        { deviceId: own.id, recordedAt: old, temperatureC: 1 },
        { deviceId: own.id, recordedAt: recent, temperatureC: 2 },
      ]);
      expect(stored.body?.accepted, stored.text).toBe(2);
      const partitionOf = async (at: string) =>
        (await dms.query(`SELECT tableoid::regclass::text AS name FROM readings WHERE device_id = $1 AND recorded_at = $2`, [own.id, at])).rows[0]?.name as string;
      const oldPartition = await partitionOf(old);
      const recentPartition = await partitionOf(recent);
      expect(oldPartition).toMatch(/^readings_p\d{8}$/);
      expect(oldPartition).not.toBe(recentPartition);

      // A DMS with a shorter retention: at start it drops the old day's partition.
      await stack.stopDmsReplicas();
      stack.env.READINGS_RETENTION_DAYS = '1';
      try {
        await stack.startDmsReplica();
      } finally {
        stack.env.READINGS_RETENTION_DAYS = String(RETENTION_DAYS);
      }
      const partitions = (await dms.query(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'readings'::regclass`)).rows.map((row) => row.name);
      expect(partitions).not.toContain(oldPartition);
      expect(partitions).toContain(recentPartition);
      expect((await allReadings(own.id)).map((r) => r.recordedAt)).toEqual([recent]);
      // And a reading that old is refused by the shorter retention now.
      const refused = await ingest([{ deviceId: own.id, recordedAt: old, temperatureC: 1 }]);
      expect(refused.body.rejected[0].error.details).toEqual({ field: 'readings.0.recordedAt', issue: 'OutOfRange' });
      await stack.stopDmsReplicas();
      await stack.startDmsReplica();
    });
  });
});
