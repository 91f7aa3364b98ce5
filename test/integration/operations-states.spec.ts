import { randomUUID } from 'node:crypto';
import type { Device, Operation, OperationResult } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  holdDevices,
  operationsPath,
  readAllResults,
  seedDevices,
  seedShipmentsWithSets,
  startBulkAssign,
  startBulkRetire,
  waitForLockWaiter,
  waitForOperation,
  waitForSettled,
} from '../factories/bulk.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS } from '../support/http-assertions.js';
import { UNKNOWN_ID } from '../support/resource-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/*
 * Operations run by a worker, through every state: Running (a chunk held on a device row that the test
 * locks), Succeeded, PartiallySucceeded, Failed, Cancelled while Running; and their results. Chunks are
 * 10 entries, so an operation of a few dozen entries has several.
 */

const CHUNK = 10;

describe('operations run by a worker', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start({ workers: 1, env: { WORKER_CHUNK_SIZE: String(CHUNK) } });
    tenant = await createTenant(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const get = (path: string) => stack.request('GET', path, { token: tenant.token });
  const cancel = (path: string) => stack.request('POST', `${path}/cancel`, { token: tenant.token });
  const device = async (id: string): Promise<Device> => (await get(`/v1/accounts/${tenant.accountIds[0]}/devices/${id}`)).body;
  const statusesOf = async (ids: string[]) => Promise.all(ids.map(async (id) => (await device(id)).status));

  /** The counts of `results` by status, as the operation's progress should show them. */
  function countsOf(results: OperationResult[]): { processed: number; succeeded: number; failed: number } {
    const succeeded = results.filter((result) => result.status === 'Succeeded').length;
    return { processed: results.length, succeeded, failed: results.length - succeeded };
  }

  /** Asserts a finished operation: its status, counts equal to its results, timestamps in order, no Retry-After. */
  async function expectFinished(path: string, status: string, total: number): Promise<{ operation: Operation; results: OperationResult[] }> {
    const operation = await waitForOperation(stack, tenant, path);
    const results = await readAllResults(stack, tenant, path);
    expect(operation.status).toBe(status);
    expect(operation.progress).toEqual({ total, ...countsOf(results) });
    expect(operation.startedAt).toMatch(TIMESTAMP_MS);
    expect(operation.completedAt).toMatch(TIMESTAMP_MS);
    expect(Date.parse(operation.startedAt!)).toBeGreaterThanOrEqual(Date.parse(operation.createdAt));
    expect(Date.parse(operation.completedAt!)).toBeGreaterThanOrEqual(Date.parse(operation.startedAt!));
    const read = await get(path);
    expect(read.body).toEqual(operation);
    expect(read.headers.get('retry-after')).toBeNull();
    return { operation, results };
  }

  describe('Running', () => {
    it('is Running with startedAt and partial progress while a chunk waits for a device, then Succeeded', async () => {
      const devices = await seedDevices(stack, tenant, 5 * CHUNK);
      const held = await holdDevices(stack, [devices[2 * CHUNK + 5]!]);
      let path: string;
      try {
        path = await startBulkRetire(stack, tenant, devices);
        // The third chunk waits for the held device: two chunks are done, and progress stops there.
        const running = await waitForOperation(stack, tenant, path, (operation) => operation.progress.processed === 2 * CHUNK);
        expect(running).toMatchObject({
          status: 'Running',
          progress: { total: 5 * CHUNK, processed: 2 * CHUNK, succeeded: 2 * CHUNK, failed: 0 },
          startedAt: expect.stringMatching(TIMESTAMP_MS),
          completedAt: null,
        });
        const read = await get(path);
        expect(read.headers.get('retry-after')).toBe('1');
        const results = await readAllResults(stack, tenant, path);
        expect(results.map((result) => result.index)).toEqual([...Array(2 * CHUNK).keys()]);
        const listed = await get(`${operationsPath(tenant)}?status=Running`);
        expect(listed.body.items.map((operation: Operation) => operation.id)).toEqual([running.id]);
        expect(await statusesOf(devices)).toEqual(devices.map((_, i) => (i < 2 * CHUNK ? 'Retired' : 'Available')));
      } finally {
        await held.release();
      }

      const { results } = await expectFinished(path, 'Succeeded', 5 * CHUNK);
      expect(results.map((result) => result.deviceId)).toEqual(devices);
      expect(new Set(await statusesOf(devices))).toEqual(new Set(['Retired']));
    });
  });

  describe('final states', () => {
    it('Succeeded: every entry applied; results carry index, setId, deviceId, status and a null error', async () => {
      const shipments = await seedShipmentsWithSets(stack, tenant, 3, 2);
      const setIds = shipments.flatMap((shipment) => shipment.setIds);
      const devices = await seedDevices(stack, tenant, 25);
      // Upper-case ids are the same ids: results and devices show them in lower case.
      const assignments = devices.map((deviceId, i) => ({
        setId: i % 3 === 0 ? setIds[i % setIds.length]!.toUpperCase() : setIds[i % setIds.length]!,
        deviceId: i % 2 === 0 ? deviceId.toUpperCase() : deviceId,
      }));

      const path = await startBulkAssign(stack, tenant, assignments);

      const { operation, results } = await expectFinished(path, 'Succeeded', 25);
      expect(operation).toMatchObject({ type: 'BulkSetAssignment', progress: { total: 25, processed: 25, succeeded: 25, failed: 0 } });
      expect(results).toEqual(
        devices.map((deviceId, index) => ({ index, setId: setIds[index % setIds.length], deviceId, status: 'Succeeded', error: null })),
      );
      for (const [index, deviceId] of devices.entries()) {
        const setId = setIds[index % setIds.length]!;
        const shipmentId = shipments.find((shipment) => shipment.setIds.includes(setId))!.shipmentId;
        expect(await device(deviceId)).toMatchObject({ status: 'Assigned', shipmentId, setId });
      }
      for (const shipment of shipments) {
        for (const setId of shipment.setIds) {
          const set = await get(`/v1/accounts/${tenant.accountIds[0]}/shipments/${shipment.shipmentId}/sets/${setId}`);
          expect([...set.body.deviceIds].sort()).toEqual(devices.filter((_, i) => setIds[i % setIds.length] === setId).sort());
        }
      }
    });

    it('PartiallySucceeded: some entries failed, each with its error', async () => {
      const devices = await seedDevices(stack, tenant, 12);
      const deviceIds = devices.map((id, i) => (i % 4 === 1 ? randomUUID() : id));

      const path = await startBulkRetire(stack, tenant, deviceIds);

      const { results } = await expectFinished(path, 'PartiallySucceeded', 12);
      expect(countsOf(results)).toEqual({ processed: 12, succeeded: 9, failed: 3 });
      for (const result of results) {
        expect(Object.keys(result).sort()).toEqual(['deviceId', 'error', 'index', 'status']);
        expect(result.deviceId).toBe(deviceIds[result.index]);
        if (result.index % 4 === 1) {
          expect(result).toMatchObject({ status: 'Failed', error: { code: 'DeviceNotExists', message: expect.stringContaining(result.deviceId) } });
          expect(Object.keys(result.error!).sort()).toEqual(['code', 'message']);
        } else {
          expect(result).toMatchObject({ status: 'Succeeded', error: null });
        }
      }
    });

    it('Failed: no entry succeeded, for either type', async () => {
      const retire = await startBulkRetire(stack, tenant, Array.from({ length: 15 }, () => randomUUID()));
      const devices = await seedDevices(stack, tenant, 3);
      const assign = await startBulkAssign(
        stack,
        tenant,
        devices.map((deviceId) => ({ setId: randomUUID(), deviceId })),
      );

      const retired = await expectFinished(retire, 'Failed', 15);
      expect(retired.operation.progress).toEqual({ total: 15, processed: 15, succeeded: 0, failed: 15 });
      expect(new Set(retired.results.map((result) => result.error?.code))).toEqual(new Set(['DeviceNotExists']));
      const assigned = await expectFinished(assign, 'Failed', 3);
      expect(new Set(assigned.results.map((result) => result.error?.code))).toEqual(new Set(['SetNotExists']));
      expect(await statusesOf(devices)).toEqual(['Available', 'Available', 'Available']);
    });

    it('a finished operation cannot be cancelled: 409 OperationFinished, and it stays as it was', async () => {
      const devices = await seedDevices(stack, tenant, 2);
      const path = await startBulkRetire(stack, tenant, devices);
      const { operation } = await expectFinished(path, 'Succeeded', 2);

      expectError(await cancel(path), 409, 'OperationFinished');

      expect((await get(path)).body).toEqual(operation);
    });
  });

  describe('Cancelled while Running', () => {
    it('cancel waits for the chunk in progress; nothing after it is applied, and a second cancel is 409', async () => {
      const total = 6 * CHUNK;
      const devices = await seedDevices(stack, tenant, total);
      const before = await Promise.all(devices.map((id) => device(id)));
      const held = await holdDevices(stack, [devices[2 * CHUNK + 3]!]);
      let path: string;
      let answer: HttpResult;
      try {
        path = await startBulkRetire(stack, tenant, devices);
        await waitForOperation(stack, tenant, path, (operation) => operation.progress.processed === 2 * CHUNK);
        // The cancel waits for the chunk (which holds the operation's turn lock while it is decided); once it
        // is seen waiting, or has answered because the chunk gave up on the lock in the meantime, the chunk
        // may go on.
        let answered = false;
        const cancelled = cancel(path).finally(() => (answered = true));
        await waitForLockWaiter(stack.env.OMS_DATABASE_URL!, 'SELECT pg_advisory_xact_lock(hashtext($1))', () => answered);
        await held.release();
        answer = await cancelled;
      } finally {
        await held.release();
      }

      expect(answer.status, answer.text).toBe(204);
      const operation = (await get(path)).body as Operation;
      expect(operation.status).toBe('Cancelled');
      await waitForSettled(stack, operation.id);
      const final = await get(path);
      expect(final.headers.get('retry-after')).toBeNull();
      const { processed } = final.body.progress;
      // The chunk held at the cancel finishes or not, whichever came first; nothing after it starts.
      expect([2 * CHUNK, 3 * CHUNK]).toContain(processed);
      expect(final.body).toMatchObject({
        status: 'Cancelled',
        progress: { total, processed, succeeded: processed, failed: 0 },
        startedAt: expect.stringMatching(TIMESTAMP_MS),
        completedAt: expect.stringMatching(TIMESTAMP_MS),
      });
      const results = await readAllResults(stack, tenant, path);
      expect(results.map((result) => result.index)).toEqual([...Array(processed).keys()]);
      expect(countsOf(results)).toEqual({ processed, succeeded: processed, failed: 0 });
      const after = await Promise.all(devices.map((id) => device(id)));
      for (const [index, read] of after.entries()) {
        if (index < processed) expect(read.status).toBe('Retired');
        else expect(read).toEqual(before[index]);
      }
      expectError(await cancel(path), 409, 'OperationFinished');
    });
  });

  describe('GET /operations/{id}/results', () => {
    let path: string;
    let otherPath: string;
    let deviceIds: string[];
    /** Entries whose index is a multiple of 3 name no device and fail; 9 of 25. */
    const FAILING = [0, 3, 6, 9, 12, 15, 18, 21, 24];

    beforeAll(async () => {
      const devices = await seedDevices(stack, tenant, 25);
      deviceIds = devices.map((id, i) => (i % 3 === 0 ? randomUUID() : id));
      path = await startBulkRetire(stack, tenant, deviceIds);
      otherPath = await startBulkRetire(stack, tenant, [randomUUID(), randomUUID()]);
      await waitForOperation(stack, tenant, path);
      await waitForOperation(stack, tenant, otherPath);
    });

    const results = (query: string) => get(`${path}/results${query}`);
    const indexesOf = (page: HttpResult): number[] => page.body.items.map((result: OperationResult) => result.index);
    const next = (page: HttpResult, query: string) => results(`?${query}cursor=${encodeURIComponent(page.body.metadata.nextCursor)}`);

    it('pages in index order with limit, cursor and includeTotal, under `items`', async () => {
      const first = await results('?limit=10&includeTotal=true');
      expect(first.status, first.text).toBe(200);
      expect(Object.keys(first.body).sort()).toEqual(['items', 'metadata']);
      expect(indexesOf(first)).toEqual([...Array(10).keys()]);
      expect(first.body.metadata).toEqual({ nextCursor: expect.any(String), total: 25 });
      const second = await next(first, 'limit=10&');
      expect(indexesOf(second)).toEqual([...Array(10).keys()].map((i) => i + 10));
      expect(second.body.metadata).toEqual({ nextCursor: expect.any(String) });
      const third = await next(second, 'limit=10&includeTotal=true&');
      expect(indexesOf(third)).toEqual([20, 21, 22, 23, 24]);
      expect(third.body.metadata).toEqual({ nextCursor: null, total: 25 });
      // The default page holds them all, and each result names its entry.
      const all = await results('');
      expect(all.body.items).toEqual([...first.body.items, ...second.body.items, ...third.body.items]);
      for (const result of all.body.items as OperationResult[]) {
        expect(result.deviceId).toBe(deviceIds[result.index]);
        expect(result).toEqual(
          FAILING.includes(result.index)
            ? { index: result.index, deviceId: result.deviceId, status: 'Failed', error: { code: 'DeviceNotExists', message: expect.any(String) } }
            : { index: result.index, deviceId: result.deviceId, status: 'Succeeded', error: null },
        );
      }
    });

    it('filters by status, and the counts equal the results of each status', async () => {
      const failed = await results('?status=Failed&includeTotal=true');
      expect(indexesOf(failed)).toEqual(FAILING);
      expect(failed.body.metadata).toEqual({ nextCursor: null, total: 9 });
      const succeeded = await results('?status=Succeeded&includeTotal=true&limit=100');
      expect(indexesOf(succeeded)).toEqual([...Array(25).keys()].filter((i) => !FAILING.includes(i)));
      expect(succeeded.body.metadata.total).toBe(16);
      const firstFailed = await results('?status=Failed&limit=4');
      expect(indexesOf(firstFailed)).toEqual([0, 3, 6, 9]);
      expect(indexesOf(await next(firstFailed, 'status=Failed&limit=4&'))).toEqual([12, 15, 18, 21]);

      const operation = (await get(path)).body as Operation;
      expect(operation).toMatchObject({ status: 'PartiallySucceeded', progress: { total: 25, processed: 25, succeeded: 16, failed: 9 } });
    });

    it('binds a cursor to its filter and its operation: 400 InvalidCursor elsewhere', async () => {
      const failed = await results('?status=Failed&limit=1');
      expectInvalidParameter(await next(failed, 'limit=1&'), 'cursor', 'InvalidCursor');
      expectInvalidParameter(await next(failed, 'status=Succeeded&limit=1&'), 'cursor', 'InvalidCursor');
      const unfiltered = await results('?limit=1');
      expectInvalidParameter(await next(unfiltered, 'status=Failed&limit=1&'), 'cursor', 'InvalidCursor');
      const elsewhere = await get(`${otherPath}/results?limit=1&cursor=${encodeURIComponent(unfiltered.body.metadata.nextCursor)}`);
      expectInvalidParameter(elsewhere, 'cursor', 'InvalidCursor');
      // Nor does the list of operations take it.
      const operations = await get(`${operationsPath(tenant)}?cursor=${encodeURIComponent(unfiltered.body.metadata.nextCursor)}`);
      expectInvalidParameter(operations, 'cursor', 'InvalidCursor');
    });

    it.each([
      ['status=Pending', 'status', 'InvalidFormat'],
      ['status=failed', 'status', 'InvalidFormat'],
      ['status=Cancelled', 'status', 'InvalidFormat'],
      ['status=', 'status', 'InvalidFormat'],
      ['type=BulkRetire', 'type', 'UnknownField'],
      ['limit=0', 'limit', 'OutOfRange'],
      ['limit=101', 'limit', 'OutOfRange'],
      ['includeTotal=yes', 'includeTotal', 'InvalidFormat'],
      ['cursor=garbage', 'cursor', 'InvalidCursor'],
    ])('refuses ?%s with 400 (%s %s)', async (query, field, issue) => {
      expectInvalidParameter(await results(`?${query}`), field, issue);
    });

    it('is 404 OperationNotExists for an unknown operation', async () => {
      expectError(await get(`${operationsPath(tenant)}/${UNKNOWN_ID}/results`), 404, 'OperationNotExists');
    });
  });
});
