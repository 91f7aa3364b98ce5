import { randomUUID } from 'node:crypto';
import type { Operation } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bulkAssignPath,
  bulkRetirePath,
  operationPath,
  operationsPath,
  readAllResults,
  seedDevices,
  seedShipmentsWithSets,
  startBulkAssign,
  startBulkRetire,
  waitForOperation,
  waitForSettled,
} from '../factories/bulk.factory.js';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS, UUID_V7 } from '../support/http-assertions.js';
import { expectNotFound, NOT_UUIDS, STRONG_ETAG, UNKNOWN_ID } from '../support/resource-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/*
 * Bulk requests as the gateway and the OMS take them: the 202 and its operation, validation of the
 * request as a whole, size limits, access, and following an operation (GET, list, cancel) while no
 * worker runs it. This stack has no worker unless a test starts one (and stops it again), so an
 * operation stays Pending until a test decides otherwise.
 */

const MIB = 1024 * 1024;
const OPERATION_FIELDS = ['id', 'type', 'status', 'url', 'progress', 'createdAt', 'startedAt', 'completedAt'].sort();
const JSON_TYPE = { 'content-type': 'application/json' };

/** `count` distinct random UUIDs. */
const uuids = (count: number): string[] => Array.from({ length: count }, () => randomUUID());

/** A JSON text of `value`, padded with whitespace inside the object to exactly `bytes` bytes. */
function paddedJson(value: Record<string, unknown>, bytes: number): string {
  const compact = JSON.stringify(value);
  const padding = bytes - Buffer.byteLength(compact);
  if (padding < 0) throw new Error(`${Buffer.byteLength(compact)} bytes do not fit in ${bytes}`);
  const text = `{${' '.repeat(padding)}${compact.slice(1)}`;
  expect(Buffer.byteLength(text)).toBe(bytes);
  return text;
}

/** Asserts the 202 of a bulk request and returns its operation; the stack has no worker, so it is Pending. */
function expectAccepted(response: HttpResult, tenant: TestTenant, type: string, total: number, account = 0): Operation {
  expect(response.status, response.text).toBe(202);
  const operation = response.body as Operation;
  expect(Object.keys(operation).sort()).toEqual(OPERATION_FIELDS);
  expect(operation.id).toMatch(UUID_V7);
  const location = `/v1/accounts/${tenant.accountIds[account]}/operations/${operation.id}`;
  expect(response.headers.get('location')).toBe(location);
  expect(operation).toEqual({
    id: operation.id,
    type,
    status: 'Pending',
    url: location,
    progress: { total, processed: 0, succeeded: 0, failed: 0 },
    createdAt: expect.stringMatching(TIMESTAMP_MS),
    startedAt: null,
    completedAt: null,
  });
  expect(response.headers.get('retry-after')).toBe('1');
  expect(response.headers.get('etag')).toMatch(STRONG_ETAG);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  return operation;
}

describe('bulk requests and their operations', () => {
  let stack: TestStack;
  /** Two accounts: 1 stands for "another account of the same tenant". */
  let tenant: TestTenant;
  let otherTenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack, { accounts: 2 });
    otherTenant = await createTenant(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** Runs `work` with one worker started, and stops it afterwards, so that the stack is workerless again. */
  async function withWorker<T>(work: () => Promise<T>): Promise<T> {
    await stack.startWorker();
    try {
      return await work();
    } finally {
      await stack.stopWorkers();
    }
  }

  const listOperations = (owner: TestTenant, query = '', account = 0) =>
    stack.request('GET', `${operationsPath(owner, account)}${query}`, { token: owner.token });

  describe('202 Accepted', () => {
    it('POST /sets/bulk-assign answers 202 with Location, Retry-After, ETag and the Pending operation, which GET Location shows', async () => {
      const [shipment] = await seedShipmentsWithSets(stack, tenant, 1, 2);
      const devices = await seedDevices(stack, tenant, 3);
      const assignments = devices.map((deviceId, i) => ({ setId: shipment!.setIds[i % 2]!, deviceId }));

      const response = await stack.request('POST', bulkAssignPath(tenant), { token: tenant.token, body: { assignments } });

      const operation = expectAccepted(response, tenant, 'BulkSetAssignment', 3);
      const read = await stack.request('GET', operationPath(response), { token: tenant.token });
      expect(read.status, read.text).toBe(200);
      expect(read.body).toEqual(operation);
      expect(read.headers.get('etag')).toBe(response.headers.get('etag'));
      expect(read.headers.get('retry-after')).toBe('1');
      // An upper-case id is the same id.
      const upper = await stack.request('GET', operationPath(response).replace(operation.id, operation.id.toUpperCase()), { token: tenant.token });
      expect(upper.body).toEqual(operation);
    });

    it('POST /devices/bulk-retire answers the same way', async () => {
      const devices = await seedDevices(stack, tenant, 2);

      const response = await stack.request('POST', bulkRetirePath(tenant), { token: tenant.token, body: { deviceIds: devices } });

      const operation = expectAccepted(response, tenant, 'BulkRetire', 2);
      const read = await stack.request('GET', operationPath(response), { token: tenant.token });
      expect(read.body).toEqual(operation);
      expect(read.headers.get('etag')).toBe(response.headers.get('etag'));
      expect(read.headers.get('retry-after')).toBe('1');
    });

    it('in another account of the tenant, Location names that account', async () => {
      const response = await stack.request('POST', bulkRetirePath(tenant, 1), { token: tenant.token, body: { deviceIds: uuids(1) } });
      expectAccepted(response, tenant, 'BulkRetire', 1, 1);
    });

    it('accepts upper-case UUIDs, 10000 entries, and one set for many devices', async () => {
      const setId = randomUUID();
      const assignments = uuids(10000).map((deviceId, i) => ({ setId: i % 2 ? setId.toUpperCase() : setId, deviceId: deviceId.toUpperCase() }));
      const assigned = await stack.request('POST', bulkAssignPath(tenant), { token: tenant.token, body: { assignments } });
      expectAccepted(assigned, tenant, 'BulkSetAssignment', 10000);
      const retired = await stack.request('POST', bulkRetirePath(tenant), {
        token: tenant.token,
        body: { deviceIds: uuids(10000).map((id) => id.toUpperCase()) },
      });
      expectAccepted(retired, tenant, 'BulkRetire', 10000);
      // Nothing to run: cancelled before any worker sees them.
      for (const created of [assigned, retired]) {
        expect((await stack.request('POST', `${operationPath(created)}/cancel`, { token: tenant.token })).status).toBe(204);
      }
    });
  });

  describe('Pending until a worker runs it', () => {
    it('stays Pending without a worker; a worker started later runs it to Succeeded, and Retry-After goes', async () => {
      const owner = await createTenant(stack);
      const [shipment] = await seedShipmentsWithSets(stack, owner, 1, 1);
      const devices = await seedDevices(stack, owner, 4);
      const setId = shipment!.setIds[0]!;
      const assign = await startBulkAssign(stack, owner, [{ setId, deviceId: devices[0]! }, { setId, deviceId: devices[1]! }]);
      const retire = await startBulkRetire(stack, owner, devices.slice(2));

      for (const path of [assign, retire]) {
        const pending = await stack.request('GET', path, { token: owner.token });
        expect(pending.body).toMatchObject({ status: 'Pending', startedAt: null, completedAt: null, progress: { processed: 0 } });
        expect(pending.headers.get('retry-after')).toBe('1');
        expect((await stack.request('GET', `${path}/results`, { token: owner.token })).body).toEqual({
          items: [],
          metadata: { nextCursor: null },
        });
      }
      expect((await listOperations(owner, '?status=Pending')).body.items).toHaveLength(2);

      const finished = await withWorker(() => Promise.all([assign, retire].map((path) => waitForOperation(stack, owner, path))));

      for (const [index, operation] of finished.entries()) {
        expect(operation).toMatchObject({ status: 'Succeeded', progress: { total: 2, processed: 2, succeeded: 2, failed: 0 } });
        expect(operation.startedAt).toMatch(TIMESTAMP_MS);
        expect(operation.completedAt).toMatch(TIMESTAMP_MS);
        expect(Date.parse(operation.startedAt!)).toBeGreaterThanOrEqual(Date.parse(operation.createdAt));
        expect(Date.parse(operation.completedAt!)).toBeGreaterThanOrEqual(Date.parse(operation.startedAt!));
        const read = await stack.request('GET', [assign, retire][index]!, { token: owner.token });
        expect(read.body).toEqual(operation);
        expect(read.headers.get('retry-after')).toBeNull();
        expect(read.headers.get('etag')).toMatch(STRONG_ETAG);
        expect(read.headers.get('etag')).not.toBe('"1"');
      }
      const device = (id: string) => stack.request('GET', `/v1/accounts/${owner.accountIds[0]}/devices/${id}`, { token: owner.token });
      expect((await device(devices[0]!)).body).toMatchObject({ status: 'Assigned', shipmentId: shipment!.shipmentId, setId });
      expect((await device(devices[3]!)).body).toMatchObject({ status: 'Retired', shipmentId: null });
    });

    it('runs 10000 entries to the end, in chunks of the default size, with counts equal to the results', async () => {
      const owner = await createTenant(stack);
      const shipments = await seedShipmentsWithSets(stack, owner, 10, 10);
      const setIds = shipments.flatMap((shipment) => shipment.setIds);
      const devices = await seedDevices(stack, owner, 10000);
      const assign = await startBulkAssign(
        stack,
        owner,
        devices.slice(0, 5000).map((deviceId, i) => ({ setId: setIds[i % setIds.length]!, deviceId })),
      );
      let retire = '';

      // Once the assignment has finished, half the retirements find their device assigned.
      const [assigned, retired] = await withWorker(async () => {
        const done = await waitForOperation(stack, owner, assign);
        retire = await startBulkRetire(stack, owner, devices);
        return [done, await waitForOperation(stack, owner, retire)];
      });

      expect(assigned).toMatchObject({ status: 'Succeeded', progress: { total: 5000, processed: 5000, succeeded: 5000, failed: 0 } });
      expect(retired).toMatchObject({ status: 'PartiallySucceeded', progress: { total: 10000, processed: 10000, succeeded: 5000, failed: 5000 } });
      const failed = await readAllResults(stack, owner, retire, 'status=Failed&');
      expect(failed.map((result) => result.index)).toEqual([...Array(5000).keys()]);
      expect(new Set(failed.map((result) => result.error?.code))).toEqual(new Set(['DeviceAssigned']));
      const total = async (query: string) =>
        (await stack.request('GET', `/v1/accounts/${owner.accountIds[0]}/devices?${query}&limit=1&includeTotal=true`, { token: owner.token })).body
          .metadata.total;
      expect([await total('status=Assigned'), await total('status=Retired'), await total('status=Available')]).toEqual([5000, 5000, 0]);
    }, 120000);
  });

  describe('validation of the request as a whole: 400, and nothing is recorded', () => {
    /** A tenant whose account never gets an operation: every refused request must leave its list empty. */
    let untouched: TestTenant;
    const setId = randomUUID();
    const ids = uuids(6);
    const valid = (i: number) => ({ setId, deviceId: ids[i]! });

    beforeAll(async () => {
      untouched = await createTenant(stack);
    });

    async function expectNothingRecorded(): Promise<void> {
      const listed = await listOperations(untouched, '?includeTotal=true');
      expect(listed.status, listed.text).toBe(200);
      expect(listed.body).toEqual({ items: [], metadata: { nextCursor: null, total: 0 } });
    }

    const post = (path: string, body: unknown) => stack.request('POST', path, { token: untouched.token, body });
    const postRaw = (path: string, rawBody: string, headers: Record<string, string> = JSON_TYPE) =>
      stack.request('POST', path, { token: untouched.token, rawBody, headers });

    it.each([
      ['an array', '[{"setId":"x"}]'],
      ['a string', '"assignments"'],
      ['null', 'null'],
      ['a number', '42'],
    ])('a body that is %s is 400 MalformedRequest on both routes', async (_, rawBody) => {
      expectError(await postRaw(bulkAssignPath(untouched), rawBody), 400, 'MalformedRequest');
      expectError(await postRaw(bulkRetirePath(untouched), rawBody), 400, 'MalformedRequest');
      await expectNothingRecorded();
    });

    it('malformed JSON is 400 MalformedRequest, another Content-Type 415', async () => {
      expectError(await postRaw(bulkAssignPath(untouched), '{"assignments":['), 400, 'MalformedRequest');
      expectError(await postRaw(bulkRetirePath(untouched), `{"deviceIds":["${ids[0]}",]}`), 400, 'MalformedRequest');
      const asText = { 'content-type': 'text/plain' };
      expectError(await postRaw(bulkAssignPath(untouched), JSON.stringify({ assignments: [valid(0)] }), asText), 415, 'UnsupportedMediaType');
      expectError(await postRaw(bulkRetirePath(untouched), JSON.stringify({ deviceIds: [ids[0]] }), asText), 415, 'UnsupportedMediaType');
      await expectNothingRecorded();
    });

    const ASSIGN_CASES: [string, unknown, string, string][] = [
      ['no assignments', {}, 'assignments', 'Required'],
      ['null assignments', { assignments: null }, 'assignments', 'InvalidFormat'],
      ['an object for assignments', { assignments: { 0: valid(0) } }, 'assignments', 'InvalidFormat'],
      ['a string for assignments', { assignments: 'all' }, 'assignments', 'InvalidFormat'],
      ['no entries', { assignments: [] }, 'assignments', 'OutOfRange'],
      ['10001 entries', { assignments: uuids(10001).map((deviceId) => ({ setId, deviceId })) }, 'assignments', 'OutOfRange'],
      ['an unknown field beside assignments', { assignments: [valid(0)], priority: 1 }, 'priority', 'UnknownField'],
      ["bulk retire's field", { deviceIds: [ids[0]] }, 'deviceIds', 'UnknownField'],
      ['a number for an entry', { assignments: [valid(0), 7] }, 'assignments.1', 'InvalidFormat'],
      ['a string for an entry', { assignments: [valid(0), ids[1]] }, 'assignments.1', 'InvalidFormat'],
      ['null for an entry', { assignments: [valid(0), null] }, 'assignments.1', 'InvalidFormat'],
      ['an array for an entry', { assignments: [valid(0), [setId, ids[1]]] }, 'assignments.1', 'InvalidFormat'],
      ['an unknown field in an entry', { assignments: [valid(0), { ...valid(1), note: 'x' }] }, 'assignments.1.note', 'UnknownField'],
      ['an entry without setId', { assignments: [valid(0), { deviceId: ids[1] }] }, 'assignments.1.setId', 'Required'],
      ['a null setId', { assignments: [{ ...valid(0), setId: null }] }, 'assignments.0.setId', 'InvalidFormat'],
      ['a numeric setId', { assignments: [{ ...valid(0), setId: 12 }] }, 'assignments.0.setId', 'InvalidFormat'],
      ['a setId that is not a UUID', { assignments: [{ ...valid(0), setId: 'pallet-1' }] }, 'assignments.0.setId', 'InvalidFormat'],
      ['an empty setId', { assignments: [{ ...valid(0), setId: '' }] }, 'assignments.0.setId', 'InvalidFormat'],
      ['a setId one character too long', { assignments: [{ ...valid(0), setId: `${setId}0` }] }, 'assignments.0.setId', 'InvalidFormat'],
      ['an entry without deviceId', { assignments: [valid(0), { setId }] }, 'assignments.1.deviceId', 'Required'],
      ['a null deviceId', { assignments: [{ setId, deviceId: null }] }, 'assignments.0.deviceId', 'InvalidFormat'],
      ['a numeric deviceId', { assignments: [{ setId, deviceId: 5 }] }, 'assignments.0.deviceId', 'InvalidFormat'],
      ['a deviceId that is not a UUID', { assignments: [{ setId, deviceId: 'SN-1' }] }, 'assignments.0.deviceId', 'InvalidFormat'],
      [
        'a device named twice: the later entry is named',
        { assignments: [valid(0), valid(1), valid(2), valid(3), valid(4), { setId: randomUUID(), deviceId: ids[2] }] },
        'assignments.5.deviceId',
        'Duplicate',
      ],
      [
        'a device named twice in different case',
        { assignments: [valid(0), valid(1), { setId, deviceId: ids[0]!.toUpperCase() }] },
        'assignments.2.deviceId',
        'Duplicate',
      ],
      // The first offence in document order is the one reported.
      ['an invalid entry before a duplicate', { assignments: [valid(0), { setId }, valid(0)] }, 'assignments.1.deviceId', 'Required'],
    ];

    it.each(ASSIGN_CASES)('bulk-assign with %s is 400', async (_, body, field, issue) => {
      expectInvalidParameter(await post(bulkAssignPath(untouched), body), field, issue);
      await expectNothingRecorded();
    });

    const RETIRE_CASES: [string, unknown, string, string][] = [
      ['no deviceIds', {}, 'deviceIds', 'Required'],
      ['null deviceIds', { deviceIds: null }, 'deviceIds', 'InvalidFormat'],
      ['a string for deviceIds', { deviceIds: ids[0] }, 'deviceIds', 'InvalidFormat'],
      ['an object for deviceIds', { deviceIds: { a: ids[0] } }, 'deviceIds', 'InvalidFormat'],
      ['no entries', { deviceIds: [] }, 'deviceIds', 'OutOfRange'],
      ['10001 entries', { deviceIds: uuids(10001) }, 'deviceIds', 'OutOfRange'],
      ['an unknown field beside deviceIds', { deviceIds: [ids[0]], reason: 'old' }, 'reason', 'UnknownField'],
      ["bulk assignment's field", { assignments: [valid(0)] }, 'assignments', 'UnknownField'],
      ['a number for an entry', { deviceIds: [ids[0], 3] }, 'deviceIds.1', 'InvalidFormat'],
      ['null for an entry', { deviceIds: [ids[0], null] }, 'deviceIds.1', 'InvalidFormat'],
      ['an object for an entry', { deviceIds: [{ deviceId: ids[0] }] }, 'deviceIds.0', 'InvalidFormat'],
      ['an entry that is not a UUID', { deviceIds: [ids[0], 'SN-1'] }, 'deviceIds.1', 'InvalidFormat'],
      ['an empty entry', { deviceIds: [''] }, 'deviceIds.0', 'InvalidFormat'],
      ['a device named twice: the later entry is named', { deviceIds: [ids[0], ids[1], ids[2], ids[1]] }, 'deviceIds.3', 'Duplicate'],
      ['a device named twice in different case', { deviceIds: [ids[0]!.toUpperCase(), ids[0]] }, 'deviceIds.1', 'Duplicate'],
    ];

    it.each(RETIRE_CASES)('bulk-retire with %s is 400', async (_, body, field, issue) => {
      expectInvalidParameter(await post(bulkRetirePath(untouched), body), field, issue);
      await expectNothingRecorded();
    });

    it('a Viewer is 403 on both routes; an account outside the role 403; another tenant\'s account 400 AccountNotFound', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      expectError(await stack.request('POST', bulkAssignPath(viewer), { token: viewer.token, body: { assignments: [valid(0)] } }), 403, 'Forbidden');
      expectError(await stack.request('POST', bulkRetirePath(viewer), { token: viewer.token, body: { deviceIds: [ids[0]] } }), 403, 'Forbidden');
      expect((await listOperations(viewer)).body).toEqual({ items: [], metadata: { nextCursor: null } });

      const partial = await createTenant(stack, { accounts: 2, roleAccounts: [1] });
      expectError(await stack.request('POST', bulkRetirePath(partial), { token: partial.token, body: { deviceIds: [ids[0]] } }), 403, 'Forbidden');

      const accountNotFound = { field: 'accountId', issue: 'AccountNotFound' };
      const foreign = { ...untouched, accountIds: otherTenant.accountIds };
      expectError(await post(bulkAssignPath(foreign), { assignments: [valid(0)] }), 400, 'InvalidParameter', accountNotFound);
      expectError(await post(bulkRetirePath(foreign), { deviceIds: [ids[0]] }), 400, 'InvalidParameter', accountNotFound);
      expect((await listOperations(otherTenant)).body.items).toEqual([]);

      expect((await stack.request('POST', bulkRetirePath(untouched), { body: { deviceIds: [ids[0]] } })).status).toBe(401);
      await expectNothingRecorded();
    });
  });

  describe('body size: bulk bodies up to 4 MiB', () => {
    it('takes a 2 MiB bulk-assign body of 10000 entries, where POST /shipments refuses 2 MiB with 413', async () => {
      const owner = await createTenant(stack);
      const assignments = uuids(10000).map((deviceId) => ({ setId: UNKNOWN_ID, deviceId }));

      const response = await stack.request('POST', bulkAssignPath(owner), {
        token: owner.token,
        rawBody: paddedJson({ assignments }, 2 * MIB),
        headers: JSON_TYPE,
      });

      expectAccepted(response, owner, 'BulkSetAssignment', 10000);
      expect((await stack.request('POST', `${operationPath(response)}/cancel`, { token: owner.token })).status).toBe(204);
      const shipment = await stack.request('POST', `/v1/accounts/${owner.accountIds[0]}/shipments`, {
        token: owner.token,
        rawBody: paddedJson({ name: 'Too large' }, 2 * MIB),
        headers: JSON_TYPE,
      });
      expectError(shipment, 413, 'PayloadTooLarge');
    });

    it('takes exactly 4 MiB; one byte more is 413 PayloadTooLarge on both routes, and nothing is recorded', async () => {
      const owner = await createTenant(stack);
      const deviceIds = uuids(10000);
      const send = (path: string, rawBody: string) => stack.request('POST', path, { token: owner.token, rawBody, headers: JSON_TYPE });

      const atLimit = await send(bulkRetirePath(owner), paddedJson({ deviceIds }, 4 * MIB));
      expectAccepted(atLimit, owner, 'BulkRetire', 10000);
      expect((await stack.request('POST', `${operationPath(atLimit)}/cancel`, { token: owner.token })).status).toBe(204);

      expectError(await send(bulkRetirePath(owner), paddedJson({ deviceIds }, 4 * MIB + 1)), 413, 'PayloadTooLarge');
      const assignments = deviceIds.map((deviceId) => ({ setId: UNKNOWN_ID, deviceId }));
      expectError(await send(bulkAssignPath(owner), paddedJson({ assignments }, 4 * MIB + 1)), 413, 'PayloadTooLarge');
      expect((await listOperations(owner)).body.items.map((o: Operation) => o.id)).toEqual([atLimit.body.id]);
    });
  });

  describe('GET, results and cancel of an operation that does not exist here', () => {
    it('is 404 OperationNotExists for an unknown id, a non-UUID id, another account\'s and another tenant\'s operation', async () => {
      const inOtherAccount = (await stack.request('POST', bulkRetirePath(tenant, 1), { token: tenant.token, body: { deviceIds: uuids(1) } }))
        .body.id as string;
      const inOtherTenant = (await stack.request('POST', bulkRetirePath(otherTenant), { token: otherTenant.token, body: { deviceIds: uuids(1) } }))
        .body.id as string;
      const base = operationsPath(tenant);
      const ids = [UNKNOWN_ID, ...NOT_UUIDS, inOtherAccount, inOtherTenant];

      await expectNotFound(
        ids.flatMap((id) => [
          () => stack.request('GET', `${base}/${id}`, { token: tenant.token }),
          () => stack.request('GET', `${base}/${id}/results`, { token: tenant.token }),
          () => stack.request('POST', `${base}/${id}/cancel`, { token: tenant.token }),
        ]),
        'OperationNotExists',
      );
      // Both are still Pending: the cancels above reached neither.
      expect((await stack.request('GET', `${operationsPath(tenant, 1)}/${inOtherAccount}`, { token: tenant.token })).body.status).toBe('Pending');
      expect((await stack.request('GET', `${operationsPath(otherTenant)}/${inOtherTenant}`, { token: otherTenant.token })).body.status).toBe(
        'Pending',
      );
    });
  });

  describe('POST /operations/{id}/cancel of a Pending operation', () => {
    it('answers 204; the operation is Cancelled at once, a second cancel is 409, and a worker later applies nothing', async () => {
      const owner = await createTenant(stack);
      const devices = await seedDevices(stack, owner, 3);
      const path = await startBulkRetire(stack, owner, devices);
      const pending = await stack.request('GET', path, { token: owner.token });

      // Named by its id in upper case, which is the same id.
      const cancel = await stack.request('POST', `${operationsPath(owner)}/${pending.body.id.toUpperCase()}/cancel`, { token: owner.token });

      expect(cancel.status, cancel.text).toBe(204);
      expect(cancel.text).toBe('');
      const cancelled = await stack.request('GET', path, { token: owner.token });
      expect(cancelled.body).toEqual({
        ...pending.body,
        status: 'Cancelled',
        completedAt: expect.stringMatching(TIMESTAMP_MS),
      });
      expect(cancelled.headers.get('retry-after')).toBeNull();
      expect(cancelled.headers.get('etag')).not.toBe(pending.headers.get('etag'));
      expectError(await stack.request('POST', `${path}/cancel`, { token: owner.token }), 409, 'OperationFinished');

      await withWorker(() => waitForSettled(stack, cancelled.body.id));

      expect((await stack.request('GET', path, { token: owner.token })).body).toEqual(cancelled.body);
      expect(await readAllResults(stack, owner, path)).toEqual([]);
      const listed = await stack.request('GET', `/v1/accounts/${owner.accountIds[0]}/devices?status=Available`, { token: owner.token });
      expect(listed.body.devices.map((device: { id: string }) => device.id)).toEqual(devices);
    });

    it('of concurrent cancels, exactly one is 204 and the others 409 OperationFinished', async () => {
      const owner = await createTenant(stack);
      const path = await startBulkRetire(stack, owner, uuids(1));

      const answers = await Promise.all(Array.from({ length: 5 }, () => stack.request('POST', `${path}/cancel`, { token: owner.token })));

      expect(answers.map((answer) => answer.status).sort()).toEqual([204, 409, 409, 409, 409]);
      for (const answer of answers.filter((one) => one.status === 409)) expectError(answer, 409, 'OperationFinished');
      expect((await stack.request('GET', path, { token: owner.token })).body.status).toBe('Cancelled');
    });

    it('is 403 for a Viewer, who can still read the operation', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      const admin = await stack.identity.createApplication(viewer.tenantId, 'Admin', 'Admin', '*');
      const adminTenant = { ...viewer, token: await issueToken(stack, viewer.tenantId, admin.applicationId, admin.applicationSecret) };
      const path = await startBulkRetire(stack, adminTenant, uuids(1));

      expectError(await stack.request('POST', `${path}/cancel`, { token: viewer.token }), 403, 'Forbidden');
      const read = await stack.request('GET', path, { token: viewer.token });
      expect(read.body.status).toBe('Pending');
      expect((await stack.request('GET', `${path}/results`, { token: viewer.token })).status).toBe(200);
    });
  });

  describe('GET /operations', () => {
    let owner: TestTenant;
    /** Created in this order: Failed, Succeeded, PartiallySucceeded (retire), Cancelled (retire), Pending (assign). */
    const operations: Operation[] = [];

    beforeAll(async () => {
      owner = await createTenant(stack);
      const [shipment] = await seedShipmentsWithSets(stack, owner, 1, 1);
      const devices = await seedDevices(stack, owner, 4);
      const setId = shipment!.setIds[0]!;
      const paths = [
        await startBulkRetire(stack, owner, uuids(2)),
        await startBulkAssign(stack, owner, [{ setId, deviceId: devices[0]! }]),
        await startBulkRetire(stack, owner, [devices[1]!, UNKNOWN_ID]),
        await startBulkRetire(stack, owner, [devices[2]!]),
      ];
      expect((await stack.request('POST', `${paths[3]}/cancel`, { token: owner.token })).status).toBe(204);
      await withWorker(async () => {
        for (const path of paths.slice(0, 3)) await waitForOperation(stack, owner, path);
        await waitForSettled(stack, paths[3]!.split('/').pop()!);
      });
      paths.push(await startBulkAssign(stack, owner, [{ setId, deviceId: devices[3]! }]));
      for (const path of paths) operations.push((await stack.request('GET', path, { token: owner.token })).body);
      expect(operations.map((operation) => operation.status)).toEqual(['Failed', 'Succeeded', 'PartiallySucceeded', 'Cancelled', 'Pending']);
    }, 120000);

    const idsOf = (response: HttpResult): string[] => response.body.items.map((operation: Operation) => operation.id);
    const pick = (...indexes: number[]) => indexes.map((index) => operations[index]!.id);

    it('lists the operations oldest first, as GET shows them, under `items`', async () => {
      const response = await listOperations(owner, '?includeTotal=true');
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ items: operations, metadata: { nextCursor: null, total: 5 } });
      expect(response.headers.get('retry-after')).toBeNull();
    });

    it.each([
      ['type=BulkRetire', [0, 2, 3]],
      ['type=BulkSetAssignment', [1, 4]],
      ['type=BulkSetAssignment,BulkRetire', [0, 1, 2, 3, 4]],
      ['status=Succeeded', [1]],
      ['status=Failed,PartiallySucceeded', [0, 2]],
      ['status=Pending,Running', [4]],
      ['status=Cancelled', [3]],
      ['status=Running', []],
      ['type=BulkRetire&status=Failed,Cancelled,Pending', [0, 3]],
      ['type=BulkSetAssignment&status=Failed', []],
    ])('filters ?%s', async (query, indexes) => {
      const response = await listOperations(owner, `?${query}`);
      expect(response.status, response.text).toBe(200);
      expect(idsOf(response)).toEqual(pick(...indexes));
    });

    it('pages with limit and cursor, with and without filters; a cursor only continues its own filters', async () => {
      const first = await listOperations(owner, '?limit=2&includeTotal=true');
      expect(idsOf(first)).toEqual(pick(0, 1));
      expect(first.body.metadata).toEqual({ nextCursor: expect.any(String), total: 5 });
      const next = (page: HttpResult, query: string) => listOperations(owner, `?${query}cursor=${encodeURIComponent(page.body.metadata.nextCursor)}`);
      const second = await next(first, 'limit=2&');
      expect(idsOf(second)).toEqual(pick(2, 3));
      const third = await next(second, 'limit=2&');
      expect(idsOf(third)).toEqual(pick(4));
      expect(third.body.metadata.nextCursor).toBeNull();

      const retires = await listOperations(owner, '?type=BulkRetire&limit=1&includeTotal=true');
      expect(idsOf(retires)).toEqual(pick(0));
      expect(retires.body.metadata.total).toBe(3);
      const secondRetire = await next(retires, 'type=BulkRetire&limit=1&');
      expect(idsOf(secondRetire)).toEqual(pick(2));
      expect(idsOf(await next(secondRetire, 'type=BulkRetire&limit=5&'))).toEqual(pick(3));

      expectInvalidParameter(await next(retires, 'limit=1&'), 'cursor', 'InvalidCursor');
      expectInvalidParameter(await next(retires, 'type=BulkSetAssignment&limit=1&'), 'cursor', 'InvalidCursor');
      expectInvalidParameter(await next(retires, 'type=BulkRetire&status=Failed&limit=1&'), 'cursor', 'InvalidCursor');
      // Another account's listing does not continue from this one's cursor either.
      const elsewhere = await stack.request('GET', `${operationsPath(tenant)}?limit=1&cursor=${encodeURIComponent(first.body.metadata.nextCursor)}`, {
        token: tenant.token,
      });
      expectInvalidParameter(elsewhere, 'cursor', 'InvalidCursor');
    });

    it.each([
      ['type=Bulk', 'type', 'InvalidFormat'],
      ['type=bulkretire', 'type', 'InvalidFormat'],
      ['type=BulkRetire,', 'type', 'InvalidFormat'],
      ['type=', 'type', 'InvalidFormat'],
      ['status=Done', 'status', 'InvalidFormat'],
      ['status=Pending,,Running', 'status', 'InvalidFormat'],
      ['status=succeeded', 'status', 'InvalidFormat'],
      ['status=', 'status', 'InvalidFormat'],
      ['state=Pending', 'state', 'UnknownField'],
      ['limit=0', 'limit', 'OutOfRange'],
      ['limit=101', 'limit', 'OutOfRange'],
      ['includeTotal=1', 'includeTotal', 'InvalidFormat'],
      ['cursor=abc', 'cursor', 'InvalidCursor'],
    ])('refuses ?%s with 400 (%s %s)', async (query, field, issue) => {
      expectInvalidParameter(await listOperations(owner, `?${query}`), field, issue);
    });
  });
});
