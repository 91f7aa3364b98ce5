import {
  DeviceStatus,
  ErrorCode,
  OperationStatus,
  OperationType,
  SetKind,
  ShipmentAction,
} from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DevicesService } from '../../apps/dms/src/devices/devices.service.js';
import { OperationChunksService } from '../../apps/dms/src/operations/operation-chunks.service.js';
import { AssignmentsService } from '../../apps/oms/src/assignments/assignments.service.js';
import { OperationsService } from '../../apps/oms/src/operations/operations.service.js';
import { SetsService } from '../../apps/oms/src/sets/sets.service.js';
import { ShipmentsService } from '../../apps/oms/src/shipments/shipments.service.js';
import { connect, deviceInput, type MediumPair, newScope, rejection, runCancelledDuringLostChunk, startMediumPair, untilWaitingForLock } from '../support/medium.js';

/**
 * OperationRunner as a worker runs it, on the OMS's database, with chunks of two entries; the DMS side
 * of each chunk is the real OperationChunksService on its own database, called in-process.
 */
const CHUNK = 2;
let pair: MediumPair;
let operations: OperationsService;
let devices: DevicesService;

beforeAll(async () => {
  pair = await startMediumPair({ WORKER_CHUNK_SIZE: String(CHUNK) });
  operations = pair.oms.get(OperationsService);
  devices = pair.dms.get(DevicesService);
});
afterEach(() => {
  pair.client.down = false;
  pair.client.intercept = undefined;
});
afterAll(() => pair?.close());

type Scope = ReturnType<typeof newScope>;

async function newShipmentWithSet(scope: Scope) {
  const shipmentId = (await pair.oms.get(ShipmentsService).create({ ...scope, shipment: { name: 'bulk' } })).resource.id;
  const setId = (await pair.oms.get(SetsService).create({ ...scope, shipmentId, set: { name: 'pallet', kind: SetKind.Pallet } })).resource.id;
  return { shipmentId, setId };
}

async function newDevices(scope: Scope, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await devices.create({ ...scope, device: deviceInput() })).resource.id);
  return ids;
}

async function assignOperation(scope: Scope, assignments: [string, string][]): Promise<string> {
  const { resource } = await operations.create({ ...scope, type: OperationType.BulkSetAssignment, assignments });
  expect(pair.oms.enqueued).toContain(resource.id);
  return resource.id;
}

async function state(scope: Scope, operationId: string) {
  const { resource } = await operations.get({ ...scope, operationId });
  const { items: results } = await operations.results({ ...scope, operationId, page: { limit: 100, includeTotal: false }, filters: {} });
  return { status: resource.status, progress: resource.progress, results: results.map((r) => [r.index, r.error?.code ?? null]) };
}

/** Counts the chunks the DMS is asked to decide, by kind. */
function countCalls(): Record<string, number> {
  const calls: Record<string, number> = {};
  pair.client.intercept = (subject, call) => {
    calls[subject] = (calls[subject] ?? 0) + 1;
    return call();
  };
  return calls;
}

const deviceOf = async (scope: Scope, deviceId: string) => (await devices.get({ ...scope, deviceId })).resource;
const versionOf = async (scope: Scope, deviceId: string) => (await devices.get({ ...scope, deviceId })).version;

describe('OperationRunner: bulk assignment', () => {
  it('decides every entry as a single assignment would, chunk by chunk, and records each result', async () => {
    const scope = newScope();
    const open = await newShipmentWithSet(scope);
    const other = await newShipmentWithSet(scope);
    const closed = await newShipmentWithSet(scope);
    await pair.oms.get(ShipmentsService).transition({ ...scope, shipmentId: closed.shipmentId, action: ShipmentAction.Cancel });
    const [free, twice, retired, elsewhere] = await newDevices(scope, 4);
    await devices.retire({ ...scope, deviceId: retired });
    await pair.oms.get(AssignmentsService).assign({ ...scope, ...other, deviceId: elsewhere });
    const operationId = await assignOperation(scope, [
      [open.setId, free],
      [crypto.randomUUID(), free],
      [closed.setId, free],
      [open.setId, retired],
      [open.setId, elsewhere],
      [open.setId, crypto.randomUUID()],
      [open.setId, twice],
      // The entry before linked it in this very chunk: another shipment is refused, as a later single call would be.
      [other.setId, twice],
    ]);
    const calls = countCalls();

    expect(await pair.oms.runner().run(operationId)).toBe(true);

    expect(calls.linkChunk).toBe(8 / CHUNK);
    expect(await state(scope, operationId)).toEqual({
      status: OperationStatus.PartiallySucceeded,
      progress: { total: 8, processed: 8, succeeded: 2, failed: 6 },
      results: [
        [0, null],
        [1, ErrorCode.SetNotExists],
        [2, ErrorCode.ShipmentClosed],
        [3, ErrorCode.DeviceRetired],
        [4, ErrorCode.DeviceAlreadyAssigned],
        [5, ErrorCode.DeviceNotExists],
        [6, null],
        [7, ErrorCode.DeviceAlreadyAssigned],
      ],
    });
    for (const id of [free, twice]) expect(await deviceOf(scope, id)).toMatchObject({ status: DeviceStatus.Assigned, ...open });
    expect(await deviceOf(scope, elsewhere)).toMatchObject(other);
  });

  it('ends Succeeded when every entry succeeds and Failed when none does; running it again does nothing', async () => {
    const scope = newScope();
    const { setId } = await newShipmentWithSet(scope);
    const ids = await newDevices(scope, 3);
    const good = await assignOperation(scope, ids.map((id) => [setId, id]));
    const runner = pair.oms.runner();
    await runner.run(good);
    expect((await state(scope, good)).status).toBe(OperationStatus.Succeeded);
    const bad = await assignOperation(scope, [[crypto.randomUUID(), ids[0]]]);
    await runner.run(bad);
    expect(await state(scope, bad)).toMatchObject({ status: OperationStatus.Failed, progress: { processed: 1, failed: 1 } });

    const calls = countCalls();
    expect(await runner.run(good)).toBe(true);
    expect(calls).toEqual({});
    expect(await versionOf(scope, ids[0])).toBe(2);
  });

  it('applies a chunk whose answer was lost only once: the retry is answered from the DMS record', async () => {
    const scope = newScope();
    const { setId } = await newShipmentWithSet(scope);
    const ids = await newDevices(scope, 2);
    const operationId = await assignOperation(scope, ids.map((id) => [setId, id]));
    let lost = false;
    pair.client.intercept = async (_subject, call) => {
      const answer = await call();
      if (lost) return answer;
      lost = true;
      throw new DomainError(ErrorCode.GatewayTimeout, 'The service did not answer in time; retry with backoff.');
    };
    expect(await pair.oms.runner().run(operationId)).toBe(true);
    expect(await state(scope, operationId)).toMatchObject({ status: OperationStatus.Succeeded, progress: { processed: 2, succeeded: 2 } });
    for (const id of ids) expect(await versionOf(scope, id)).toBe(2);
  });

  it('waits out an unavailable DMS and then finishes', async () => {
    const scope = newScope();
    const { setId } = await newShipmentWithSet(scope);
    const [id] = await newDevices(scope, 1);
    const operationId = await assignOperation(scope, [[setId, id]]);
    let refusals = 2;
    pair.client.intercept = (_subject, call) =>
      refusals-- > 0 ? Promise.reject(new DomainError(ErrorCode.ServiceUnavailable, 'The service is not available.')) : call();
    expect(await pair.oms.runner().run(operationId)).toBe(true);
    expect(refusals).toBeLessThan(0);
    expect((await state(scope, operationId)).status).toBe(OperationStatus.Succeeded);
  });

  it('stops after the chunk in progress when told to, and a later run continues where it stopped', async () => {
    const scope = newScope();
    const { setId } = await newShipmentWithSet(scope);
    const ids = await newDevices(scope, 4);
    const operationId = await assignOperation(scope, ids.map((id) => [setId, id]));
    const stop = new AbortController();
    pair.client.intercept = async (_subject, call) => {
      stop.abort();
      return call();
    };
    expect(await pair.oms.runner().run(operationId, stop.signal)).toBe(false);
    expect(await state(scope, operationId)).toMatchObject({ status: OperationStatus.Running, progress: { processed: CHUNK } });
    const calls = countCalls();
    expect(await pair.oms.runner().run(operationId)).toBe(true);
    expect(calls.linkChunk).toBe(1);
    expect((await state(scope, operationId)).progress).toMatchObject({ processed: 4, succeeded: 4 });
  });

  it('ends an operation it cannot run as Failed with what it processed (abandon)', async () => {
    const scope = newScope();
    const { setId } = await newShipmentWithSet(scope);
    const ids = await newDevices(scope, 4);
    const operationId = await assignOperation(scope, ids.map((id) => [setId, id]));
    let chunks = 0;
    pair.client.intercept = (_subject, call) => (++chunks > 1 ? Promise.reject(new Error('unexpected failure')) : call());
    const runner = pair.oms.runner();
    await expect(runner.run(operationId)).rejects.toThrow('unexpected failure');
    await runner.abandon(operationId);
    expect(await state(scope, operationId)).toMatchObject({ status: OperationStatus.Failed, progress: { processed: CHUNK, succeeded: CHUNK } });
    pair.client.intercept = undefined;
    expect(await runner.run(operationId)).toBe(true);
    expect((await state(scope, operationId)).progress.processed).toBe(CHUNK);
  });
});

describe('OperationRunner: cancel', () => {
  it('applies nothing of an operation cancelled before it starts, and the DMS takes no chunk of it afterwards', async () => {
    const scope = newScope();
    const { setId } = await newShipmentWithSet(scope);
    const ids = await newDevices(scope, 3);
    const operationId = await assignOperation(scope, ids.map((id) => [setId, id]));
    expect(await operations.cancel({ ...scope, operationId })).toBeNull();
    const calls = countCalls();
    expect(await pair.oms.runner().run(operationId)).toBe(true);
    expect(calls).toEqual({ settle: 1 });
    expect(await state(scope, operationId)).toEqual({
      status: OperationStatus.Cancelled,
      progress: { total: 3, processed: 0, succeeded: 0, failed: 0 },
      results: [],
    });
    for (const id of ids) expect((await deviceOf(scope, id)).status).toBe(DeviceStatus.Available);
    const late = await rejection(
      pair.dms.get(OperationChunksService).link({
        ...scope,
        operationId,
        deadline: Date.now() + 60_000,
        entries: [{ index: 0, deviceId: ids[0], target: { shipmentId: crypto.randomUUID(), setId } }],
      }),
    );
    expect(late.code).toBe(ErrorCode.OperationFinished);
    expect((await rejection(operations.cancel({ ...scope, operationId }))).code).toBe(ErrorCode.OperationFinished);
  });

  it('honours a cancel that arrives during a chunk: that chunk is kept, no later chunk runs', async () => {
    const scope = newScope();
    const { setId } = await newShipmentWithSet(scope);
    const ids = await newDevices(scope, 6);
    const operationId = await assignOperation(scope, ids.map((id) => [setId, id]));
    let cancelling: Promise<null> | undefined;
    pair.client.intercept = async (subject, call) => {
      if (subject === 'linkChunk' && !cancelling) {
        cancelling = operations.cancel({ ...scope, operationId });
        const observer = await connect(pair.oms.url);
        try {
          await untilWaitingForLock(observer);
        } finally {
          await observer.end();
        }
      }
      return call();
    };
    expect(await pair.oms.runner().run(operationId)).toBe(true);
    expect(await cancelling).toBeNull();
    expect(await state(scope, operationId)).toEqual({
      status: OperationStatus.Cancelled,
      progress: { total: 6, processed: CHUNK, succeeded: CHUNK, failed: 0 },
      results: [
        [0, null],
        [1, null],
      ],
    });
    const statuses = await Promise.all(ids.map(async (id) => (await deviceOf(scope, id)).status));
    expect(statuses).toEqual([DeviceStatus.Assigned, DeviceStatus.Assigned, ...Array(4).fill(DeviceStatus.Available)]);
  });

  it('records what the DMS applied of a chunk whose answer was lost before the cancel', async () => {
    const scope = newScope();
    const { setId } = await newShipmentWithSet(scope);
    const ids = await newDevices(scope, 4);
    const operationId = await assignOperation(scope, ids.map((id) => [setId, id]));
    expect(await runCancelledDuringLostChunk(pair, operationId, () => operations.cancel({ ...scope, operationId }))).toBe(true);
    expect(await state(scope, operationId)).toEqual({
      status: OperationStatus.Cancelled,
      progress: { total: 4, processed: CHUNK, succeeded: CHUNK, failed: 0 },
      results: [
        [0, null],
        [1, null],
      ],
    });
  });
});

describe('OperationRunner: bulk retire', () => {
  it('retires Available devices and refuses assigned, retired and unknown ones as a single retire would', async () => {
    const scope = newScope();
    const { setId, shipmentId } = await newShipmentWithSet(scope);
    const [free, assigned, old] = await newDevices(scope, 3);
    await pair.oms.get(AssignmentsService).assign({ ...scope, shipmentId, setId, deviceId: assigned });
    await devices.retire({ ...scope, deviceId: old });
    const unknown = crypto.randomUUID();
    const { resource } = await operations.create({ ...scope, type: OperationType.BulkRetire, deviceIds: [free, assigned, old, unknown, free] });
    const calls = countCalls();
    await pair.oms.runner().run(resource.id);
    expect(calls.retireChunk).toBe(3);
    expect(await state(scope, resource.id)).toEqual({
      status: OperationStatus.PartiallySucceeded,
      progress: { total: 5, processed: 5, succeeded: 1, failed: 4 },
      results: [
        [0, null],
        [1, ErrorCode.DeviceAssigned],
        [2, ErrorCode.DeviceRetired],
        [3, ErrorCode.DeviceNotExists],
        [4, ErrorCode.DeviceRetired],
      ],
    });
    expect((await deviceOf(scope, free)).status).toBe(DeviceStatus.Retired);
    expect((await deviceOf(scope, assigned)).status).toBe(DeviceStatus.Assigned);
  });
});
