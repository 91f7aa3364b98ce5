import { type EventEnvelope, ErrorCode, OperationStatus, OperationType, SetKind, ShipmentAction, ShipmentStatus } from '@tracking/contracts';
import { writeOutbox } from '@tracking/outbox';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DevicesService } from '../../apps/dms/src/devices/devices.service.js';
import { AssignmentsService } from '../../apps/oms/src/assignments/assignments.service.js';
import { OperationsService } from '../../apps/oms/src/operations/operations.service.js';
import { SetsService } from '../../apps/oms/src/sets/sets.service.js';
import { ShipmentsService } from '../../apps/oms/src/shipments/shipments.service.js';
import { connect, deviceInput, lostAnswer, type MediumPair, newScope, rejection, runCancelledDuringLostChunk, startMediumPair } from '../support/medium.js';

/**
 * The cases of docs/events.md, "Which changes produce which events", that need a call to fail or an
 * answer to be lost at an exact point: the OMS and the DMS in-process (`startMediumPair`), their outboxes
 * read with SQL. Each test has an account of its own, and reads only that account's events.
 */
const CHUNK = 2;
let pair: MediumPair;
let omsDb: pg.Client;
let dmsDb: pg.Client;
let devices: DevicesService;
let shipments: ShipmentsService;
let operations: OperationsService;

beforeAll(async () => {
  pair = await startMediumPair({ WORKER_CHUNK_SIZE: String(CHUNK) });
  [omsDb, dmsDb] = await Promise.all([connect(pair.oms.url), connect(pair.dms.url)]);
  devices = pair.dms.get(DevicesService);
  shipments = pair.oms.get(ShipmentsService);
  operations = pair.oms.get(OperationsService);
});
afterEach(() => {
  pair.client.down = false;
  pair.client.intercept = undefined;
});
afterAll(async () => {
  await Promise.all([omsDb?.end(), dmsDb?.end()]);
  await pair?.close();
});

type Scope = ReturnType<typeof newScope>;

/** The account's events in one service's outbox, in the order written. */
async function eventsIn(client: pg.Client, scope: Scope): Promise<EventEnvelope['event'][]> {
  const { rows } = await client.query<{ payload: string }>('SELECT payload FROM outbox ORDER BY seq');
  return rows.map((row) => (JSON.parse(row.payload) as EventEnvelope).event).filter((event) => event.accountId === scope.accountId);
}
const omsEvents = (scope: Scope) => eventsIn(omsDb, scope);
const dmsEvents = (scope: Scope) => eventsIn(dmsDb, scope);
const types = (events: { type: string }[]) => events.map((event) => event.type);

async function newShipmentWithSet(scope: Scope) {
  const shipmentId = (await shipments.create({ ...scope, shipment: { name: 'events' } })).resource.id;
  const setId = (await pair.oms.get(SetsService).create({ ...scope, shipmentId, set: { name: 'pallet', kind: SetKind.Pallet } })).resource.id;
  return { shipmentId, setId };
}

async function newDevices(scope: Scope, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await devices.create({ ...scope, device: deviceInput() })).resource.id);
  return ids;
}


describe('a change that rolls back writes no event', () => {
  it('a link or an unlink the DMS finishes after the deadline rolls back with its event', async () => {
    const scope = newScope();
    const { shipmentId, setId } = await newShipmentWithSet(scope);
    const [deviceId] = await newDevices(scope, 1);
    const before = await dmsEvents(scope);

    const late = await rejection(devices.assign({ ...scope, deviceId, shipmentId, setId, deadline: Date.now() - 1, checkedAt: Date.now() }));
    expect(late.code).toBe(ErrorCode.GatewayTimeout);
    expect((await devices.get({ ...scope, deviceId })).resource.status).toBe('Available');
    expect(await dmsEvents(scope)).toEqual(before);

    await pair.oms.get(AssignmentsService).assign({ ...scope, shipmentId, setId, deviceId });
    const linked = await dmsEvents(scope);
    expect(types(linked.slice(before.length))).toEqual(['device.assigned']);
    const lateUnlink = await rejection(devices.unassign({ ...scope, deviceId, shipmentId, setId, deadline: Date.now() - 1 }));
    expect(lateUnlink.code).toBe(ErrorCode.GatewayTimeout);
    const lateRelease = await rejection(devices.release({ ...scope, shipmentId, deadline: Date.now() - 1 }));
    expect(lateRelease.code).toBe(ErrorCode.GatewayTimeout);
    expect((await devices.get({ ...scope, deviceId })).resource.shipmentId).toBe(shipmentId);
    expect(await dmsEvents(scope)).toEqual(linked);
  });

  it('a close whose OMS transaction fails after the DMS released: the releases are events, the close is not until it commits', async () => {
    const scope = newScope();
    const { shipmentId, setId } = await newShipmentWithSet(scope);
    const [deviceId] = await newDevices(scope, 1);
    await pair.oms.get(AssignmentsService).assign({ ...scope, shipmentId, setId, deviceId });
    const omsBefore = await omsEvents(scope);
    const dmsBefore = await dmsEvents(scope);

    // The DMS releases the device (and commits), but its answer never reaches the OMS, which rolls back.
    pair.client.intercept = async (subject, call) => {
      const answer = await call();
      if (subject === 'release') throw lostAnswer();
      return answer;
    };
    expect((await rejection(shipments.transition({ ...scope, shipmentId, action: ShipmentAction.Cancel }))).code).toBe(ErrorCode.GatewayTimeout);
    pair.client.intercept = undefined;
    expect(await omsEvents(scope)).toEqual(omsBefore);
    const released = (await dmsEvents(scope)).slice(dmsBefore.length);
    expect(released.map((event) => [event.type, event.data])).toEqual([['device.unassigned', { deviceId, shipmentId, setId }]]);

    // The client's retry closes it: one shipment.cancelled, and nothing more to release.
    await shipments.transition({ ...scope, shipmentId, action: ShipmentAction.Cancel });
    const closed = (await omsEvents(scope)).slice(omsBefore.length);
    expect(types(closed)).toEqual(['shipment.cancelled']);
    expect(closed[0]!.data).toMatchObject({ id: shipmentId, status: ShipmentStatus.Cancelled });
    expect((await dmsEvents(scope)).slice(dmsBefore.length)).toEqual(released);
  });
});

describe('bulk operations write each event once, whatever is retried', () => {
  async function assignOperation(scope: Scope, assignments: [string, string][]): Promise<string> {
    return (await operations.create({ ...scope, type: OperationType.BulkSetAssignment, assignments })).resource.id;
  }
  const read = async (scope: Scope, operationId: string) => (await operations.get({ ...scope, operationId })).resource;

  it('a chunk whose answer was lost: one device.assigned per device and one operation.finished', async () => {
    const scope = newScope();
    const { shipmentId, setId } = await newShipmentWithSet(scope);
    const ids = await newDevices(scope, 3);
    const operationId = await assignOperation(scope, ids.map((id) => [setId, id]));
    let lost = 0;
    pair.client.intercept = async (_subject, call) => {
      const answer = await call();
      if (lost++ > 0) return answer;
      throw lostAnswer();
    };
    expect(await pair.oms.runner().run(operationId)).toBe(true);
    expect(lost).toBeGreaterThan(2);

    const linked = (await dmsEvents(scope)).filter((event) => event.type === 'device.assigned');
    expect(linked.map((event) => event.data)).toEqual(ids.map((deviceId) => ({ deviceId, shipmentId, setId })));
    const finished = (await omsEvents(scope)).filter((event) => event.type === 'operation.finished');
    expect(finished.map((event) => event.data)).toEqual([await read(scope, operationId)]);
    expect((finished[0]!.data as { status: string }).status).toBe(OperationStatus.Succeeded);

    expect(await pair.oms.runner().run(operationId)).toBe(true);
    await pair.oms.runner().abandon(operationId);
    expect((await omsEvents(scope)).filter((event) => event.type === 'operation.finished')).toEqual(finished);
  });

  it('an abandoned operation writes one operation.finished (Failed), and running it again writes none', async () => {
    const scope = newScope();
    const { setId } = await newShipmentWithSet(scope);
    const ids = await newDevices(scope, 4);
    const operationId = await assignOperation(scope, ids.map((id) => [setId, id]));
    let chunks = 0;
    pair.client.intercept = (_subject, call) => (++chunks > 1 ? Promise.reject(new Error('unexpected failure')) : call());
    const runner = pair.oms.runner();
    await expect(runner.run(operationId)).rejects.toThrow('unexpected failure');
    expect(types(await omsEvents(scope))).not.toContain('operation.finished');
    await runner.abandon(operationId);
    pair.client.intercept = undefined;
    expect(await runner.run(operationId)).toBe(true);
    await runner.abandon(operationId);

    const finished = (await omsEvents(scope)).filter((event) => event.type === 'operation.finished');
    expect(finished.map((event) => event.data)).toEqual([await read(scope, operationId)]);
    expect(finished[0]!.data).toMatchObject({ status: OperationStatus.Failed, progress: { processed: CHUNK, succeeded: CHUNK } });
    expect((await dmsEvents(scope)).filter((event) => event.type === 'device.assigned')).toHaveLength(CHUNK);
  });

  it('a cancel: one operation.finished once the worker has settled it, with the counts of a chunk applied before the cancel', async () => {
    const scope = newScope();
    const { setId } = await newShipmentWithSet(scope);
    const ids = await newDevices(scope, 4);
    const operationId = await assignOperation(scope, ids.map((id) => [setId, id]));
    expect(await runCancelledDuringLostChunk(pair, operationId, () => operations.cancel({ ...scope, operationId }))).toBe(true);

    const finished = (await omsEvents(scope)).filter((event) => event.type === 'operation.finished');
    expect(finished.map((event) => event.data)).toEqual([await read(scope, operationId)]);
    expect(finished[0]!.data).toMatchObject({ status: OperationStatus.Cancelled, progress: { total: 4, processed: CHUNK, succeeded: CHUNK } });
    expect((await dmsEvents(scope)).filter((event) => event.type === 'device.assigned')).toHaveLength(CHUNK);
  });

  it('a bulk retirement retried after a lost answer: one device.retired per device, equal to the device as read', async () => {
    const scope = newScope();
    const ids = await newDevices(scope, 3);
    const operationId = (await operations.create({ ...scope, type: OperationType.BulkRetire, deviceIds: ids })).resource.id;
    let lost = false;
    pair.client.intercept = async (_subject, call) => {
      const answer = await call();
      if (lost) return answer;
      lost = true;
      throw lostAnswer();
    };
    expect(await pair.oms.runner().run(operationId)).toBe(true);
    const retired = (await dmsEvents(scope)).filter((event) => event.type === 'device.retired');
    const now = await Promise.all(ids.map(async (deviceId) => (await devices.get({ ...scope, deviceId })).resource));
    expect(retired.map((event) => event.data)).toEqual(now);
  });
});

describe('the outbox table', () => {
  it('takes more messages than one statement holds, in the order written (each rolled back here)', async () => {
    const messages = Array.from({ length: 2500 }, (_, i) => ({ id: crypto.randomUUID(), subject: `test.${i}`, payload: `{"n":${i},"text":"it's \\"quoted\\" ünïcode"}` }));
    await dmsDb.query('BEGIN');
    try {
      const { rows: [before] } = await dmsDb.query<{ seq: string | null }>('SELECT max(seq) AS seq FROM outbox');
      await writeOutbox(dmsDb, messages);
      const { rows } = await dmsDb.query<{ msg_id: string; subject: string; payload: string }>(
        'SELECT msg_id, subject, payload FROM outbox WHERE seq > $1 ORDER BY seq',
        [before?.seq ?? 0],
      );
      expect(rows.map((row) => ({ id: row.msg_id, subject: row.subject, payload: row.payload }))).toEqual(messages);
    } finally {
      await dmsDb.query('ROLLBACK');
    }
  });

  it('runs the statement given alongside with the first messages, or alone when there is none (each rolled back here)', async () => {
    const [deviceId] = await newDevices(newScope(), 1);
    const alongside = (seen: string) => ({ sql: 'UPDATE devices SET last_seen_at = $2 WHERE id = $1', parameters: [deviceId, seen] });
    const lastSeen = async () => (await dmsDb.query<{ at: Date | null }>('SELECT last_seen_at AS at FROM devices WHERE id = $1', [deviceId])).rows[0]?.at?.toISOString();
    const messages = Array.from({ length: 1500 }, (_, i) => ({ id: crypto.randomUUID(), subject: `test.${i}`, payload: `{"n":${i}}` }));
    await dmsDb.query('BEGIN');
    try {
      const { rows: [before] } = await dmsDb.query<{ seq: string | null }>('SELECT max(seq) AS seq FROM outbox');
      await writeOutbox(dmsDb, messages, alongside('2026-01-02T03:04:05.678Z'));
      const { rows } = await dmsDb.query<{ msg_id: string; subject: string; payload: string }>(
        'SELECT msg_id, subject, payload FROM outbox WHERE seq > $1 ORDER BY seq',
        [before?.seq ?? 0],
      );
      expect(rows.map((row) => ({ id: row.msg_id, subject: row.subject, payload: row.payload }))).toEqual(messages);
      expect(await lastSeen()).toBe('2026-01-02T03:04:05.678Z');
      await writeOutbox(dmsDb, [], alongside('2026-02-03T04:05:06.789Z'));
      expect(await lastSeen()).toBe('2026-02-03T04:05:06.789Z');
    } finally {
      await dmsDb.query('ROLLBACK');
    }
  });

  it('compresses large payloads with lz4 in both services', async () => {
    for (const db of [omsDb, dmsDb]) {
      const { rows } = await db.query<{ compression: string }>(
        "SELECT attcompression AS compression FROM pg_attribute WHERE attrelid = 'outbox'::regclass AND attname = 'payload'",
      );
      expect(rows).toEqual([{ compression: 'l' }]);
    }
  });
});
