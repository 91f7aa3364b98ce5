import type { Device, Operation, Shipment } from '@tracking/contracts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { seedDevices, startBulkAssign, startBulkRetire, waitForOperation, waitForSettled } from '../factories/bulk.factory.js';
import { createDevice, deviceBody, devicesPath } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createSet, setsPath } from '../factories/set.factory.js';
import { createShipment, createShipmentIn } from '../factories/shipment.factory.js';
import { expectError, UUID_V7, TIMESTAMP_MS } from '../support/http-assertions.js';
import { UNKNOWN_ID } from '../support/resource-assertions.js';
import { type OutboxEvent, type OutboxMark, OutboxReader } from '../support/outbox-events.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/*
 * docs/events.md, "Which changes produce which events": every route that changes something writes exactly
 * one event per change into its service's outbox, in the change's transaction; failed and no-op requests
 * write none. The stack runs without relays (OUTBOX_RELAY_ENABLED=false), so the rows stay in the outboxes
 * and the test reads them with SQL; each test compares what its own requests wrote (rows after a mark).
 */

const CHUNK = 2;

describe('events written by the changes of the API', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let outbox: OutboxReader;
  let mark: OutboxMark;
  let accountId: string;
  let shipments: string;
  let devices: string;

  beforeAll(async () => {
    stack = await TestStack.start({ workers: 1, env: { OUTBOX_RELAY_ENABLED: 'false', WORKER_CHUNK_SIZE: String(CHUNK) } });
    tenant = await createTenant(stack, { accounts: 2 });
    accountId = tenant.accountIds[0]!;
    shipments = `/v1/accounts/${accountId}/shipments`;
    devices = devicesPath(tenant);
    outbox = await OutboxReader.connect(stack);
  });
  afterAll(async () => {
    await outbox?.close();
    await stack?.stop();
  });
  beforeEach(async () => {
    mark = await outbox.mark();
  });

  const request = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    stack.request(method, path, { token: tenant.token, body, headers });
  /** What the requests of this test wrote, in the account under test. */
  const written = () => outbox.since(mark, accountId);
  const writtenTypes = async () => (await written()).map((row) => row.event.type);
  const expectStatus = (response: HttpResult, status: number) => expect(response.status, response.text).toBe(status);
  const assignmentPath = (shipmentId: string, setId: string, deviceId: string) =>
    `${setsPath(tenant, shipmentId)}/${setId}/devices/${deviceId}`;
  const getShipment = async (id: string): Promise<Shipment> => (await request('GET', `${shipments}/${id}`)).body;
  const getDevice = async (id: string): Promise<Device> => (await request('GET', `${devices}/${id}`)).body;
  const newDevice = async (): Promise<Device> => (await createDevice(stack, tenant)).device;
  /** A shipment with two sets, through the API. */
  const newShipmentWithSets = async () => {
    const shipment = await createShipment(stack, tenant);
    const setA = (await createSet(stack, tenant, shipment.id)).set.id;
    const setB = (await createSet(stack, tenant, shipment.id)).set.id;
    return { shipmentId: shipment.id, setA, setB };
  };
  const assign = (shipmentId: string, setId: string, deviceId: string) => request('PUT', assignmentPath(shipmentId, setId, deviceId));

  /** The one event written since the mark, checked for its envelope; fails unless there is exactly one. */
  async function onlyEvent(): Promise<OutboxEvent> {
    const rows = await written();
    expect(rows.map((row) => row.event.type)).toHaveLength(1);
    return checkedEnvelope(rows[0]!);
  }

  /** The envelope every event has: id = message id (UUIDv7), subject, tenant, account, occurredAt. */
  function checkedEnvelope(row: OutboxEvent): OutboxEvent {
    expect(row.event.id).toMatch(UUID_V7);
    expect(row.msgId).toBe(row.event.id);
    expect(row.tenantId).toBe(tenant.tenantId);
    expect(row.event.accountId).toBe(accountId);
    expect(row.subject).toBe(`events.${tenant.tenantId}.${accountId}.${row.event.type}`);
    expect(row.event.occurredAt).toMatch(TIMESTAMP_MS);
    return row;
  }

  describe('shipments', () => {
    it('POST writes one shipment.created whose data is the 201 body', async () => {
      const created = await request('POST', shipments, { name: 'Reefer to Lyon', tags: ['cold'], metadata: { po: 7 } });
      expectStatus(created, 201);
      const row = await onlyEvent();
      expect(row.service).toBe('oms');
      expect(row.event).toMatchObject({ type: 'shipment.created', data: created.body });
      expect(row.event.data).toEqual(await getShipment(created.body.id));
    });

    it('PATCH writes one shipment.updated whose data is the 200 body; a PATCH that changes nothing writes none', async () => {
      const shipment = await createShipment(stack, tenant);
      mark = await outbox.mark();
      const patched = await request('PATCH', `${shipments}/${shipment.id}`, { name: 'Renamed', carrier: 'ACME' });
      expectStatus(patched, 200);
      const row = await onlyEvent();
      expect(row.event).toMatchObject({ type: 'shipment.updated', data: patched.body });
      expect(row.event.data).toEqual(await getShipment(shipment.id));

      mark = await outbox.mark();
      const same = await request('PATCH', `${shipments}/${shipment.id}`, { name: 'Renamed', carrier: 'ACME' });
      expectStatus(same, 200);
      expect(same.body.updatedAt).toBe(patched.body.updatedAt);
      expect(await writtenTypes()).toEqual([]);
    });

    it('failed PATCHes write nothing: 412 stale If-Match, 404, 409 duplicate reference, 409 closed, 400', async () => {
      const first = await request('POST', shipments, { name: 'First', reference: `REF-${Date.now()}` });
      const shipment = await request('POST', shipments, { name: 'Second' });
      const stale = shipment.headers.get('etag')!;
      expectStatus(await request('PATCH', `${shipments}/${shipment.body.id}`, { name: 'Newer' }), 200);
      const closed = await createShipmentIn(stack, tenant, 'Cancelled');
      mark = await outbox.mark();

      expectError(await request('PATCH', `${shipments}/${shipment.body.id}`, { name: 'Stale' }, { 'if-match': stale }), 412, 'PreconditionFailed');
      expectError(await request('PATCH', `${shipments}/${UNKNOWN_ID}`, { name: 'Nobody' }), 404, 'ShipmentNotExists');
      expectError(await request('PATCH', `${shipments}/${shipment.body.id}`, { reference: first.body.reference }), 409, 'DuplicateReference');
      expectError(await request('PATCH', `${shipments}/${closed.id}`, { name: 'Too late' }), 409, 'ShipmentClosed');
      expect((await request('PATCH', `${shipments}/${shipment.body.id}`, { status: 'Delivered' })).status).toBe(400);
      expect(await writtenTypes()).toEqual([]);
    });

    it('each transition writes its own event whose data is the shipment as GET then shows it', async () => {
      const steps: [string, string][] = [
        ['start', 'shipment.started'],
        ['deliver', 'shipment.delivered'],
        ['complete', 'shipment.completed'],
      ];
      const shipment = await createShipment(stack, tenant);
      for (const [action, type] of steps) {
        mark = await outbox.mark();
        expectStatus(await request('POST', `${shipments}/${shipment.id}/${action}`), 204);
        const row = await onlyEvent();
        expect(row.event.type).toBe(type);
        expect(row.event.data).toEqual(await getShipment(shipment.id));
      }

      const other = await createShipmentIn(stack, tenant, 'InTransit');
      mark = await outbox.mark();
      expectStatus(await request('POST', `${shipments}/${other.id}/cancel`), 204);
      const row = await onlyEvent();
      expect(row.event.type).toBe('shipment.cancelled');
      expect(row.event.data).toEqual(await getShipment(other.id));
      expect((row.event.data as Shipment).status).toBe('Cancelled');
    });

    it('refused transitions write nothing: 409 wrong state, 412 stale If-Match, 404', async () => {
      const planned = await request('POST', shipments, { name: 'Planned' });
      const stale = planned.headers.get('etag')!;
      expectStatus(await request('PATCH', `${shipments}/${planned.body.id}`, { name: 'Planned, renamed' }), 200);
      const completed = await createShipmentIn(stack, tenant, 'Completed');
      mark = await outbox.mark();

      expectError(await request('POST', `${shipments}/${planned.body.id}/deliver`), 409, 'InvalidStateTransition', { from: 'Planned', action: 'deliver' });
      expectError(await request('POST', `${shipments}/${completed.id}/cancel`), 409, 'InvalidStateTransition', { from: 'Completed', action: 'cancel' });
      expectError(await request('POST', `${shipments}/${planned.body.id}/start`, undefined, { 'if-match': stale }), 412, 'PreconditionFailed');
      expectError(await request('POST', `${shipments}/${UNKNOWN_ID}/start`), 404, 'ShipmentNotExists');
      expect(await writtenTypes()).toEqual([]);
    });

    it('two concurrent starts of one shipment: one 204, one 409, and one shipment.started', async () => {
      for (let round = 0; round < 5; round++) {
        const shipment = await createShipment(stack, tenant);
        mark = await outbox.mark();
        const answers = await Promise.all([0, 1].map(() => request('POST', `${shipments}/${shipment.id}/start`)));
        expect(answers.map((answer) => answer.status).sort()).toEqual([204, 409]);
        const row = await onlyEvent();
        expect(row.event.type).toBe('shipment.started');
        expect(row.event.data).toEqual(await getShipment(shipment.id));
      }
    });

    it('DELETE writes one shipment.deleted with the last state, and a device.unassigned per device it released', async () => {
      const { shipmentId, setA, setB } = await newShipmentWithSets();
      const [d1, d2, d3] = [await newDevice(), await newDevice(), await newDevice()];
      for (const [setId, device] of [[setA, d1], [setA, d2], [setB, d3]] as const) expectStatus(await assign(shipmentId, setId, device.id), 204);
      const last = await getShipment(shipmentId);
      mark = await outbox.mark();

      expectStatus(await request('DELETE', `${shipments}/${shipmentId}`), 204);
      const rows = (await written()).map(checkedEnvelope);
      const deleted = rows.filter((row) => row.event.type === 'shipment.deleted');
      expect(deleted).toHaveLength(1);
      expect(deleted[0]!.event.data).toEqual(last);
      const unassigned = rows.filter((row) => row.event.type === 'device.unassigned');
      expect(unassigned.every((row) => row.service === 'dms')).toBe(true);
      expect(unassigned.map((row) => row.event.data)).toEqual(
        expect.arrayContaining([
          { deviceId: d1.id, shipmentId, setId: setA },
          { deviceId: d2.id, shipmentId, setId: setA },
          { deviceId: d3.id, shipmentId, setId: setB },
        ]),
      );
      expect(rows).toHaveLength(4);
    });

    it('a DELETE refused (closed 409, stale If-Match 412, unknown 404) writes nothing', async () => {
      const shipment = await request('POST', shipments, { name: 'Kept' });
      const stale = shipment.headers.get('etag')!;
      expectStatus(await request('PATCH', `${shipments}/${shipment.body.id}`, { name: 'Kept, renamed' }), 200);
      const completed = await createShipmentIn(stack, tenant, 'Completed');
      mark = await outbox.mark();
      expectError(await request('DELETE', `${shipments}/${completed.id}`), 409, 'ShipmentClosed');
      expectError(await request('DELETE', `${shipments}/${shipment.body.id}`, undefined, { 'if-match': stale }), 412, 'PreconditionFailed');
      expectError(await request('DELETE', `${shipments}/${UNKNOWN_ID}`), 404, 'ShipmentNotExists');
      expect(await writtenTypes()).toEqual([]);
    });

    it('complete and cancel write their event and a device.unassigned per device released, with the set it was in', async () => {
      for (const [status, action, type] of [
        ['Delivered', 'complete', 'shipment.completed'],
        ['Planned', 'cancel', 'shipment.cancelled'],
      ] as const) {
        const { shipmentId, setA, setB } = await newShipmentWithSets();
        const [d1, d2] = [await newDevice(), await newDevice()];
        expectStatus(await assign(shipmentId, setA, d1.id), 204);
        expectStatus(await assign(shipmentId, setB, d2.id), 204);
        for (const step of status === 'Delivered' ? ['start', 'deliver'] : []) {
          expectStatus(await request('POST', `${shipments}/${shipmentId}/${step}`), 204);
        }
        mark = await outbox.mark();
        expectStatus(await request('POST', `${shipments}/${shipmentId}/${action}`), 204);
        const rows = (await written()).map(checkedEnvelope);
        expect(rows.map((row) => row.event.type).sort()).toEqual([type, 'device.unassigned', 'device.unassigned'].sort());
        expect(rows.find((row) => row.event.type === type)!.event.data).toEqual(await getShipment(shipmentId));
        expect(rows.filter((row) => row.event.type === 'device.unassigned').map((row) => row.event.data)).toEqual(
          expect.arrayContaining([
            { deviceId: d1.id, shipmentId, setId: setA },
            { deviceId: d2.id, shipmentId, setId: setB },
          ]),
        );
      }
    });

    it('a close that the DMS cannot serve rolls back with its event: 503 and nothing written', async () => {
      const { shipmentId, setA } = await newShipmentWithSets();
      const device = await newDevice();
      expectStatus(await assign(shipmentId, setA, device.id), 204);
      const before = await getShipment(shipmentId);
      mark = await outbox.mark();
      await stack.stopDmsReplicas();
      try {
        expectError(await request('POST', `${shipments}/${shipmentId}/cancel`), 503, 'ServiceUnavailable');
        expectError(await request('DELETE', `${shipments}/${shipmentId}`), 503, 'ServiceUnavailable');
      } finally {
        await stack.startDmsReplica();
      }
      expect(await writtenTypes()).toEqual([]);
      expect(await getShipment(shipmentId)).toEqual(before);
      expect((await getDevice(device.id)).shipmentId).toBe(shipmentId);
    });
  });

  describe('devices', () => {
    it('POST writes one device.created whose data is the 201 body (from the DMS); a duplicate serial number writes none', async () => {
      const body = deviceBody({ firmwareVersion: '1.2.3', metadata: { site: 'Lyon' } });
      const created = await request('POST', devices, body);
      expectStatus(created, 201);
      const row = await onlyEvent();
      expect(row.service).toBe('dms');
      expect(row.event).toMatchObject({ type: 'device.created', data: created.body });
      expect(row.event.data).toEqual(await getDevice(created.body.id));

      mark = await outbox.mark();
      expectError(await request('POST', devices, body), 409, 'DuplicateSerialNumber');
      expect(await writtenTypes()).toEqual([]);
    });

    it('PATCH writes one device.updated whose data is the 200 body; no-op, stale and retired PATCHes write none', async () => {
      const created = await request('POST', devices, deviceBody());
      const stale = created.headers.get('etag')!;
      mark = await outbox.mark();
      const patched = await request('PATCH', `${devices}/${created.body.id}`, { model: 'TempTrack T5', batteryLevel: 80 });
      expectStatus(patched, 200);
      const row = await onlyEvent();
      expect(row.event).toMatchObject({ type: 'device.updated', data: patched.body });
      expect(row.event.data).toEqual(await getDevice(created.body.id));

      const retired = await newDevice();
      expectStatus(await request('POST', `${devices}/${retired.id}/retire`), 204);
      mark = await outbox.mark();
      expectStatus(await request('PATCH', `${devices}/${created.body.id}`, { model: 'TempTrack T5', batteryLevel: 80 }), 200);
      expectError(await request('PATCH', `${devices}/${created.body.id}`, { model: 'X' }, { 'if-match': stale }), 412, 'PreconditionFailed');
      expectError(await request('PATCH', `${devices}/${retired.id}`, { model: 'X' }), 409, 'DeviceRetired');
      expectError(await request('PATCH', `${devices}/${UNKNOWN_ID}`, { model: 'X' }), 404, 'DeviceNotExists');
      expect(await writtenTypes()).toEqual([]);
    });

    it('retire writes one device.retired whose data is the device as GET then shows it; a second retire writes none', async () => {
      const device = await newDevice();
      mark = await outbox.mark();
      expectStatus(await request('POST', `${devices}/${device.id}/retire`), 204);
      const row = await onlyEvent();
      expect(row.event.type).toBe('device.retired');
      expect(row.event.data).toEqual(await getDevice(device.id));
      expect((row.event.data as Device).status).toBe('Retired');

      mark = await outbox.mark();
      expectError(await request('POST', `${devices}/${device.id}/retire`), 409, 'DeviceRetired');
      expect(await writtenTypes()).toEqual([]);
    });

    it('DELETE writes one device.deleted with the last state; deleting an assigned or unknown device writes none', async () => {
      const device = await newDevice();
      const last = await getDevice(device.id);
      mark = await outbox.mark();
      expectStatus(await request('DELETE', `${devices}/${device.id}`), 204);
      const row = await onlyEvent();
      expect(row.event).toMatchObject({ type: 'device.deleted', data: last });

      const { shipmentId, setA } = await newShipmentWithSets();
      const assigned = await newDevice();
      expectStatus(await assign(shipmentId, setA, assigned.id), 204);
      mark = await outbox.mark();
      expectError(await request('DELETE', `${devices}/${assigned.id}`), 409, 'DeviceAssigned');
      expectError(await request('POST', `${devices}/${assigned.id}/retire`), 409, 'DeviceAssigned');
      expectError(await request('DELETE', `${devices}/${device.id}`), 404, 'DeviceNotExists');
      expect(await writtenTypes()).toEqual([]);
    });
  });

  describe('device links', () => {
    it('assign writes one device.assigned; the same assignment again writes none', async () => {
      const { shipmentId, setA } = await newShipmentWithSets();
      const device = await newDevice();
      mark = await outbox.mark();
      expectStatus(await assign(shipmentId, setA, device.id), 204);
      const row = await onlyEvent();
      expect(row.service).toBe('dms');
      expect(row.event).toMatchObject({ type: 'device.assigned', data: { deviceId: device.id, shipmentId, setId: setA } });

      mark = await outbox.mark();
      expectStatus(await assign(shipmentId, setA, device.id), 204);
      expect(await writtenTypes()).toEqual([]);
    });

    it('moving a device to another set of its shipment writes one device.assigned with the new set', async () => {
      const { shipmentId, setA, setB } = await newShipmentWithSets();
      const device = await newDevice();
      expectStatus(await assign(shipmentId, setA, device.id), 204);
      mark = await outbox.mark();
      expectStatus(await assign(shipmentId, setB, device.id), 204);
      const row = await onlyEvent();
      expect(row.event).toMatchObject({ type: 'device.assigned', data: { deviceId: device.id, shipmentId, setId: setB } });
    });

    it('refused assignments write nothing: another shipment, retired, closed, unknown set, unknown device', async () => {
      const first = await newShipmentWithSets();
      const second = await newShipmentWithSets();
      const taken = await newDevice();
      expectStatus(await assign(first.shipmentId, first.setA, taken.id), 204);
      const retired = await newDevice();
      expectStatus(await request('POST', `${devices}/${retired.id}/retire`), 204);
      const closed = await createShipmentIn(stack, tenant, 'Planned');
      const closedSet = (await createSet(stack, tenant, closed.id)).set.id;
      expectStatus(await request('POST', `${shipments}/${closed.id}/cancel`), 204);
      const free = await newDevice();
      mark = await outbox.mark();

      expectError(await assign(second.shipmentId, second.setA, taken.id), 409, 'DeviceAlreadyAssigned', {
        deviceId: taken.id,
        shipmentId: first.shipmentId,
      });
      expectError(await assign(second.shipmentId, second.setA, retired.id), 409, 'DeviceRetired');
      expectError(await assign(closed.id, closedSet, free.id), 409, 'ShipmentClosed');
      expectError(await assign(second.shipmentId, UNKNOWN_ID, free.id), 404, 'SetNotExists');
      expectError(await assign(second.shipmentId, second.setA, UNKNOWN_ID), 404, 'DeviceNotExists');
      expect(await writtenTypes()).toEqual([]);
    });

    it('two concurrent assignments of one device to two shipments write one device.assigned, for the winner', async () => {
      const first = await newShipmentWithSets();
      const second = await newShipmentWithSets();
      const device = await newDevice();
      mark = await outbox.mark();
      const answers = await Promise.all([assign(first.shipmentId, first.setA, device.id), assign(second.shipmentId, second.setA, device.id)]);
      expect(answers.map((answer) => answer.status).sort()).toEqual([204, 409]);
      const winner = answers[0]!.status === 204 ? first : second;
      const row = await onlyEvent();
      expect(row.event).toMatchObject({ type: 'device.assigned', data: { deviceId: device.id, shipmentId: winner.shipmentId, setId: winner.setA } });
    });

    it('unassign writes one device.unassigned; unassigning again, or from another set, writes none', async () => {
      const { shipmentId, setA, setB } = await newShipmentWithSets();
      const device = await newDevice();
      expectStatus(await assign(shipmentId, setA, device.id), 204);
      mark = await outbox.mark();
      expectError(await request('DELETE', assignmentPath(shipmentId, setB, device.id)), 404, 'AssignmentNotExists');
      expect(await writtenTypes()).toEqual([]);
      expectStatus(await request('DELETE', assignmentPath(shipmentId, setA, device.id)), 204);
      const row = await onlyEvent();
      expect(row.event).toMatchObject({ type: 'device.unassigned', data: { deviceId: device.id, shipmentId, setId: setA } });

      mark = await outbox.mark();
      expectError(await request('DELETE', assignmentPath(shipmentId, setA, device.id)), 404, 'AssignmentNotExists');
      expect(await writtenTypes()).toEqual([]);
    });

    it("deleting a set writes a device.unassigned for each of its devices and none for the other set's", async () => {
      const { shipmentId, setA, setB } = await newShipmentWithSets();
      const [d1, d2, d3] = [await newDevice(), await newDevice(), await newDevice()];
      for (const [setId, device] of [[setA, d1], [setA, d2], [setB, d3]] as const) expectStatus(await assign(shipmentId, setId, device.id), 204);
      mark = await outbox.mark();
      expectStatus(await request('DELETE', `${setsPath(tenant, shipmentId)}/${setA}`), 204);
      const rows = (await written()).map(checkedEnvelope);
      expect(rows.map((row) => row.event.type)).toEqual(['device.unassigned', 'device.unassigned']);
      expect(rows.map((row) => row.event.data)).toEqual(
        expect.arrayContaining([
          { deviceId: d1.id, shipmentId, setId: setA },
          { deviceId: d2.id, shipmentId, setId: setA },
        ]),
      );
    });

    it('changes below a shipment that are no device links (sets, items) write no events', async () => {
      const { shipmentId, setA } = await newShipmentWithSets();
      mark = await outbox.mark();
      expectStatus(await request('PATCH', `${setsPath(tenant, shipmentId)}/${setA}`, { name: 'Renamed pallet' }), 200);
      expectStatus(await request('POST', `${setsPath(tenant, shipmentId)}/${setA}/items`, { sku: 'SKU-1', quantity: 3 }), 201);
      expect(await writtenTypes()).toEqual([]);
    });
  });

  describe('idempotent replays', () => {
    it('a POST replayed with its Idempotency-Key writes its event once', async () => {
      const headers = { 'idempotency-key': `events-${Date.now()}` };
      const first = await request('POST', shipments, { name: 'Once' }, headers);
      const replay = await request('POST', shipments, { name: 'Once' }, headers);
      expectStatus(first, 201);
      expect(replay.body).toEqual(first.body);
      const row = await onlyEvent();
      expect(row.event).toMatchObject({ type: 'shipment.created', data: first.body });
    });
  });

  describe('bulk operations', () => {
    it('a bulk assignment writes a device.assigned per device it linked or moved, and one operation.finished', async () => {
      const { shipmentId, setA, setB } = await newShipmentWithSets();
      const [linked, moved, already, retired, unknown] = [await newDevice(), await newDevice(), await newDevice(), await newDevice(), UNKNOWN_ID];
      expectStatus(await assign(shipmentId, setA, moved.id), 204);
      expectStatus(await assign(shipmentId, setB, already.id), 204);
      expectStatus(await request('POST', `${devices}/${retired.id}/retire`), 204);
      mark = await outbox.mark();
      const path = await startBulkAssign(stack, tenant, [
        { setId: setA, deviceId: linked.id },
        { setId: setB, deviceId: moved.id },
        { setId: setB, deviceId: already.id },
        { setId: setA, deviceId: retired.id },
        { setId: setA, deviceId: unknown },
      ]);
      const finishedOperation = await waitForOperation(stack, tenant, path);
      expect(finishedOperation.status).toBe('PartiallySucceeded');
      await waitForSettled(stack, finishedOperation.id);

      const rows = (await written()).map(checkedEnvelope);
      const assigned = rows.filter((row) => row.event.type === 'device.assigned');
      expect(assigned.map((row) => row.event.data)).toEqual([
        { deviceId: linked.id, shipmentId, setId: setA },
        { deviceId: moved.id, shipmentId, setId: setB },
      ]);
      const finished = rows.filter((row) => row.event.type === 'operation.finished');
      expect(finished).toHaveLength(1);
      expect(finished[0]!.service).toBe('oms');
      expect(finished[0]!.event.data).toEqual((await request('GET', path)).body);
      expect(rows).toHaveLength(3);
    });

    it('a bulk retirement writes a device.retired per device retired, each as GET then shows it, and one operation.finished', async () => {
      const seeded = await seedDevices(stack, tenant, 5);
      const assigned = await newDevice();
      const { shipmentId, setA } = await newShipmentWithSets();
      expectStatus(await assign(shipmentId, setA, assigned.id), 204);
      mark = await outbox.mark();
      const path = await startBulkRetire(stack, tenant, [...seeded, assigned.id, UNKNOWN_ID]);
      const operation = await waitForOperation(stack, tenant, path);
      await waitForSettled(stack, operation.id);
      expect(operation.progress).toEqual({ total: 7, processed: 7, succeeded: 5, failed: 2 });

      const rows = (await written()).map(checkedEnvelope);
      const retired = rows.filter((row) => row.event.type === 'device.retired');
      expect(retired.map((row) => (row.event.data as Device).id)).toEqual(seeded);
      for (const row of retired) expect(row.event.data).toEqual(await getDevice((row.event.data as Device).id));
      const finished = rows.filter((row) => row.event.type === 'operation.finished');
      expect(finished.map((row) => row.event.data)).toEqual([(await request('GET', path)).body]);
      expect(rows).toHaveLength(6);
    });

    it('a cancelled operation writes one operation.finished, with its final state, and nothing for the entries it skipped', async () => {
      await stack.stopWorkers();
      const seeded = await seedDevices(stack, tenant, 4);
      mark = await outbox.mark();
      let path: string;
      try {
        path = await startBulkRetire(stack, tenant, seeded);
        expectStatus(await request('POST', `${path}/cancel`), 204);
        expectError(await request('POST', `${path}/cancel`), 409, 'OperationFinished');
      } finally {
        await stack.startWorker();
      }
      const operation: Operation = (await request('GET', path)).body;
      await waitForSettled(stack, operation.id);
      const rows = (await written()).map(checkedEnvelope);
      expect(rows.map((row) => row.event.type)).toEqual(['operation.finished']);
      const data = rows[0]!.event.data as Operation;
      expect(data.status).toBe('Cancelled');
      expect(data).toEqual((await request('GET', path)).body);
      for (const id of seeded) expect((await getDevice(id)).status).toBe('Available');
    });
  });

  describe('accounts', () => {
    it("events carry the account of the change: another account's shipment writes under that account", async () => {
      const other = tenant.accountIds[1]!;
      const created = await stack.request('POST', `/v1/accounts/${other}/shipments`, { token: tenant.token, body: { name: 'Elsewhere' } });
      expectStatus(created, 201);
      expect(await writtenTypes()).toEqual([]);
      const rows = await outbox.since(mark, other);
      expect(rows.map((row) => [row.event.type, row.event.accountId, row.subject])).toEqual([
        ['shipment.created', other, `events.${tenant.tenantId}.${other}.shipment.created`],
      ]);
    });
  });
});
