import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { type AssignDeviceRequest, Subjects } from '@tracking/contracts';
import { NatsRpcClient } from '@tracking/messaging';
import pg from 'pg';
import { createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createSet, setsPath } from '../factories/set.factory.js';
import { createShipment, createShipments } from '../factories/shipment.factory.js';
import { expectError } from '../support/http-assertions.js';
import { expectNotFound, NOT_UUIDS, UNKNOWN_ID } from '../support/resource-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/** A shipment with one set, in a given account of a tenant. */
interface ShipmentWithSet {
  tenant: TestTenant;
  account: number;
  shipmentId: string;
  setId: string;
}

/** The requests of device assignment for one stack, shared by the suites below. */
function assignmentClient(stack: () => TestStack) {
  const accountOf = (tenant: TestTenant, account = 0) => tenant.accountIds[account]!;
  const shipmentPath = (tenant: TestTenant, shipmentId: string, account = 0) =>
    `/v1/accounts/${accountOf(tenant, account)}/shipments/${shipmentId}`;
  const assignmentPath = (target: ShipmentWithSet, deviceId: string) =>
    `${setsPath(target.tenant, target.shipmentId, target.account)}/${target.setId}/devices/${deviceId}`;

  return {
    shipmentPath,
    assignmentPath,
    async newShipmentWithSet(tenant: TestTenant, account = 0): Promise<ShipmentWithSet> {
      const shipmentId = (await createShipment(stack(), tenant, { account })).id;
      const setId = (await createSet(stack(), tenant, shipmentId, { account })).set.id;
      return { tenant, account, shipmentId, setId };
    },
    async newSet(target: ShipmentWithSet): Promise<ShipmentWithSet> {
      const setId = (await createSet(stack(), target.tenant, target.shipmentId, { account: target.account })).set.id;
      return { ...target, setId };
    },
    async newDevice(tenant: TestTenant, account = 0): Promise<string> {
      return (await createDevice(stack(), tenant, { account })).device.id;
    },
    assign: (target: ShipmentWithSet, deviceId: string, token = target.tenant.token) =>
      stack().request('PUT', assignmentPath(target, deviceId), { token }),
    unassign: (target: ShipmentWithSet, deviceId: string, token = target.tenant.token) =>
      stack().request('DELETE', assignmentPath(target, deviceId), { token }),
    device: (tenant: TestTenant, deviceId: string, account = 0) =>
      stack().request('GET', `/v1/accounts/${accountOf(tenant, account)}/devices/${deviceId}`, { token: tenant.token }),
    set: (target: ShipmentWithSet) =>
      stack().request('GET', `${setsPath(target.tenant, target.shipmentId, target.account)}/${target.setId}`, { token: target.tenant.token }),
    shipment: (target: ShipmentWithSet) =>
      stack().request('GET', shipmentPath(target.tenant, target.shipmentId, target.account), { token: target.tenant.token }),
    shipmentDevices: (tenant: TestTenant, shipmentId: string, query = '', account = 0) =>
      stack().request('GET', `${shipmentPath(tenant, shipmentId, account)}/devices${query}`, { token: tenant.token }),
    /** Runs lifecycle actions (`start`, `deliver`, `complete`, `cancel`) through the real endpoints; returns the last answer. */
    async act(target: ShipmentWithSet, ...actions: string[]): Promise<HttpResult> {
      let last: HttpResult | undefined;
      for (const action of actions) {
        last = await stack().request('POST', `${shipmentPath(target.tenant, target.shipmentId, target.account)}/${action}`, {
          token: target.tenant.token,
        });
      }
      return last!;
    },
  };
}

function expectNoContent(response: HttpResult): void {
  expect(response.status, response.text).toBe(204);
}

describe('device assignment over HTTP', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let otherTenant: TestTenant;
  const client = assignmentClient(() => stack);
  const { newShipmentWithSet, newSet, newDevice, assign, unassign, device, set, shipmentDevices, act } = client;

  beforeAll(async () => {
    stack = await TestStack.start();
    // Account 0 for most tests, 1 as "another account of the same tenant".
    tenant = await createTenant(stack, { accounts: 2 });
    otherTenant = await createTenant(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** Asserts the device is Available and that assigning it to a fresh shipment works at once. */
  async function expectReleased(deviceId: string): Promise<void> {
    const read = await device(tenant, deviceId);
    expect(read.body).toMatchObject({ status: 'Available', shipmentId: null, setId: null });
    const next = await newShipmentWithSet(tenant);
    expectNoContent(await assign(next, deviceId));
    expect((await device(tenant, deviceId)).body).toMatchObject({ status: 'Assigned', shipmentId: next.shipmentId, setId: next.setId });
  }

  describe('PUT /shipments/{shipmentId}/sets/{setId}/devices/{deviceId}', () => {
    it('answers 204 and links the device: the device, the set and the shipment devices show it', async () => {
      const target = await newShipmentWithSet(tenant);
      const deviceId = await newDevice(tenant);
      const before = await device(tenant, deviceId);

      const response = await assign(target, deviceId);

      expectNoContent(response);
      expect(response.text).toBe('');
      const after = await device(tenant, deviceId);
      expect(after.body).toMatchObject({ status: 'Assigned', shipmentId: target.shipmentId, setId: target.setId });
      expect(Number(after.headers.get('etag')!.replaceAll('"', ''))).toBe(Number(before.headers.get('etag')!.replaceAll('"', '')) + 1);
      expect((await set(target)).body.deviceIds).toEqual([deviceId]);
      const listed = await stack.request('GET', setsPath(tenant, target.shipmentId), { token: tenant.token });
      expect(listed.body.items.map((item: { deviceIds: string[] }) => item.deviceIds)).toEqual([[deviceId]]);
      const devices = await shipmentDevices(tenant, target.shipmentId);
      expect(devices.status, devices.text).toBe(200);
      expect(Object.keys(devices.body).sort()).toEqual(['devices', 'metadata']);
      expect(devices.body.devices).toEqual([after.body]);
      expect(devices.body.metadata.nextCursor).toBeNull();
    });

    it('is idempotent: assigning again answers 204 and changes nothing, not even the version', async () => {
      const target = await newShipmentWithSet(tenant);
      const deviceId = await newDevice(tenant);
      expectNoContent(await assign(target, deviceId));
      const first = await device(tenant, deviceId);

      expectNoContent(await assign(target, deviceId));

      const second = await device(tenant, deviceId);
      expect(second.body).toEqual(first.body);
      expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
    });

    it('moves the device to another set of the same shipment, and deviceIds follow', async () => {
      const first = await newShipmentWithSet(tenant);
      const second = await newSet(first);
      const deviceId = await newDevice(tenant);
      const other = await newDevice(tenant);
      expectNoContent(await assign(first, deviceId));
      expectNoContent(await assign(first, other));

      expectNoContent(await assign(second, deviceId));

      expect((await device(tenant, deviceId)).body).toMatchObject({ status: 'Assigned', shipmentId: first.shipmentId, setId: second.setId });
      expect((await set(first)).body.deviceIds).toEqual([other]);
      expect((await set(second)).body.deviceIds).toEqual([deviceId]);
      const devices = await shipmentDevices(tenant, first.shipmentId);
      expect(devices.body.devices.map((found: { id: string }) => found.id).sort()).toEqual([deviceId, other].sort());
    });

    it('keeps deviceIds sorted and empty for sets without devices, and PATCH of a set shows them too', async () => {
      const target = await newShipmentWithSet(tenant);
      const empty = await newSet(target);
      const ids = [await newDevice(tenant), await newDevice(tenant), await newDevice(tenant)];
      for (const id of ids) expectNoContent(await assign(target, id));

      expect((await set(target)).body.deviceIds).toEqual([...ids].sort());
      expect((await set(empty)).body.deviceIds).toEqual([]);
      const patched = await stack.request('PATCH', `${setsPath(tenant, target.shipmentId)}/${target.setId}`, {
        token: tenant.token,
        body: { name: 'Renamed' },
      });
      expect(patched.status, patched.text).toBe(200);
      expect(patched.body.deviceIds).toEqual([...ids].sort());
    });

    it('is 409 DeviceAlreadyAssigned, naming the other shipment, when the device is on another ongoing shipment', async () => {
      const holder = await newShipmentWithSet(tenant);
      const other = await newShipmentWithSet(tenant);
      const deviceId = await newDevice(tenant);
      expectNoContent(await assign(holder, deviceId));
      await act(holder, 'start');

      expectError(await assign(other, deviceId), 409, 'DeviceAlreadyAssigned', { deviceId, shipmentId: holder.shipmentId });
      expect((await device(tenant, deviceId)).body).toMatchObject({ shipmentId: holder.shipmentId, setId: holder.setId });
      expect((await set(other)).body.deviceIds).toEqual([]);
    });

    it('is 409 DeviceRetired for a retired device', async () => {
      const target = await newShipmentWithSet(tenant);
      const { device: created, path } = await createDevice(stack, tenant);
      expectNoContent(await stack.request('POST', `${path}/retire`, { token: tenant.token }));

      expectError(await assign(target, created.id), 409, 'DeviceRetired');
      expect((await device(tenant, created.id)).body).toMatchObject({ status: 'Retired', shipmentId: null });
    });

    it('is 409 ShipmentClosed once the shipment is completed or cancelled, for assign and unassign', async () => {
      const completed = await newShipmentWithSet(tenant);
      const cancelled = await newShipmentWithSet(tenant);
      expectNoContent(await act(completed, 'start', 'deliver', 'complete'));
      expectNoContent(await act(cancelled, 'cancel'));
      const deviceId = await newDevice(tenant);

      for (const target of [completed, cancelled]) {
        expectError(await assign(target, deviceId), 409, 'ShipmentClosed');
        expectError(await unassign(target, deviceId), 409, 'ShipmentClosed');
      }
      expect((await device(tenant, deviceId)).body).toMatchObject({ status: 'Available' });
    });

    it('is 404 in path order: ShipmentNotExists, then SetNotExists, then DeviceNotExists', async () => {
      const target = await newShipmentWithSet(tenant);
      const elsewhere = await newShipmentWithSet(tenant);
      const foreign = await newShipmentWithSet(tenant, 1);
      const deviceId = await newDevice(tenant);

      await expectNotFound(
        [
          () => assign({ ...target, shipmentId: UNKNOWN_ID }, deviceId),
          ...NOT_UUIDS.map((id) => () => assign({ ...target, shipmentId: id }, deviceId)),
          // Another account's shipment, through this account's path.
          () => assign({ ...target, shipmentId: foreign.shipmentId, setId: foreign.setId }, deviceId),
          // Everything unknown: the shipment comes first.
          () => assign({ ...target, shipmentId: UNKNOWN_ID, setId: UNKNOWN_ID }, 'not-a-uuid'),
        ],
        'ShipmentNotExists',
      );
      await expectNotFound(
        [
          () => assign({ ...target, setId: UNKNOWN_ID }, deviceId),
          ...NOT_UUIDS.map((id) => () => assign({ ...target, setId: id }, deviceId)),
          // A set of another shipment of the same account.
          () => assign({ ...target, setId: elsewhere.setId }, deviceId),
          () => assign({ ...target, setId: UNKNOWN_ID }, 'not-a-uuid'),
        ],
        'SetNotExists',
      );
      const foreignDevice = await newDevice(tenant, 1);
      const otherTenantDevice = await newDevice(otherTenant);
      await expectNotFound(
        [
          () => assign(target, UNKNOWN_ID),
          ...NOT_UUIDS.map((id) => () => assign(target, id)),
          () => assign(target, foreignDevice),
          () => assign(target, otherTenantDevice),
        ],
        'DeviceNotExists',
      );
      expect((await set(target)).body.deviceIds).toEqual([]);
      expect((await device(tenant, foreignDevice, 1)).body).toMatchObject({ status: 'Available' });
    });

    it('is 403 for a Viewer, who can still read the devices of a shipment', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      const target: ShipmentWithSet = { tenant: viewer, account: 0, shipmentId: UNKNOWN_ID, setId: UNKNOWN_ID };

      expectError(await assign(target, UNKNOWN_ID), 403, 'Forbidden');
      expectError(await unassign(target, UNKNOWN_ID), 403, 'Forbidden');
      expectError(await shipmentDevices(viewer, UNKNOWN_ID), 404, 'ShipmentNotExists');
    });
  });

  describe('DELETE /shipments/{shipmentId}/sets/{setId}/devices/{deviceId}', () => {
    it('answers 204 and makes the device Available; a second unassign is 404 AssignmentNotExists', async () => {
      const target = await newShipmentWithSet(tenant);
      const deviceId = await newDevice(tenant);
      expectNoContent(await assign(target, deviceId));

      const response = await unassign(target, deviceId);

      expectNoContent(response);
      expect((await device(tenant, deviceId)).body).toMatchObject({ status: 'Available', shipmentId: null, setId: null });
      expect((await set(target)).body.deviceIds).toEqual([]);
      expect((await shipmentDevices(tenant, target.shipmentId)).body.devices).toEqual([]);
      expectError(await unassign(target, deviceId), 404, 'AssignmentNotExists');
      await expectReleased(deviceId);
    });

    it('is 404 AssignmentNotExists unless the device is on exactly that set, and for unknown devices', async () => {
      const target = await newShipmentWithSet(tenant);
      const sibling = await newSet(target);
      const deviceId = await newDevice(tenant);
      expectNoContent(await assign(target, deviceId));

      await expectNotFound(
        [
          () => unassign(sibling, deviceId),
          () => unassign(target, UNKNOWN_ID),
          () => unassign(target, 'not-a-uuid'),
          async () => unassign(target, await newDevice(tenant)),
          async () => unassign(target, await newDevice(tenant, 1)),
        ],
        'AssignmentNotExists',
      );
      expectError(await unassign({ ...target, setId: UNKNOWN_ID }, deviceId), 404, 'SetNotExists');
      expectError(await unassign({ ...target, shipmentId: UNKNOWN_ID }, deviceId), 404, 'ShipmentNotExists');
      expect((await device(tenant, deviceId)).body).toMatchObject({ status: 'Assigned', setId: target.setId });
    });
  });

  describe('GET /shipments/{shipmentId}/devices', () => {
    it('pages through the devices of the shipment only, and is 404 ShipmentNotExists for an unknown shipment', async () => {
      const target = await newShipmentWithSet(tenant);
      const other = await newShipmentWithSet(tenant);
      const ids = [await newDevice(tenant), await newDevice(tenant), await newDevice(tenant)];
      for (const id of ids) expectNoContent(await assign(target, id));
      expectNoContent(await assign(other, await newDevice(tenant)));

      const first = await shipmentDevices(tenant, target.shipmentId, '?limit=2&includeTotal=true');
      expect(first.status, first.text).toBe(200);
      expect(first.body.metadata.total).toBe(3);
      expect(first.body.devices.map((found: { id: string }) => found.id)).toEqual(ids.slice(0, 2));
      const second = await shipmentDevices(tenant, target.shipmentId, `?limit=2&cursor=${encodeURIComponent(first.body.metadata.nextCursor)}`);
      expect(second.body.devices.map((found: { id: string }) => found.id)).toEqual(ids.slice(2));
      expect(second.body.metadata.nextCursor).toBeNull();

      expectError(await shipmentDevices(tenant, UNKNOWN_ID), 404, 'ShipmentNotExists');
      expectError(await shipmentDevices(tenant, 'not-a-uuid'), 404, 'ShipmentNotExists');
      expectError(await shipmentDevices(tenant, target.shipmentId, '', 1), 404, 'ShipmentNotExists');
      expectError(await shipmentDevices(tenant, target.shipmentId, '?status=Assigned'), 400, 'InvalidParameter', {
        field: 'status',
        issue: 'UnknownField',
      });
    });
  });

  describe('release', () => {
    it.each([
      ['complete', ['start', 'deliver', 'complete']],
      ['cancel', ['cancel']],
    ])('%s frees every device of the shipment', async (_name, actions) => {
      const target = await newShipmentWithSet(tenant);
      const sibling = await newSet(target);
      const deviceId = await newDevice(tenant);
      const other = await newDevice(tenant);
      expectNoContent(await assign(target, deviceId));
      expectNoContent(await assign(sibling, other));

      expectNoContent(await act(target, ...actions));

      expect((await set(target)).body.deviceIds).toEqual([]);
      expect((await shipmentDevices(tenant, target.shipmentId)).body.devices).toEqual([]);
      await expectReleased(deviceId);
      await expectReleased(other);
    });

    it('DELETE of the shipment frees its devices', async () => {
      const target = await newShipmentWithSet(tenant);
      const deviceId = await newDevice(tenant);
      expectNoContent(await assign(target, deviceId));

      expectNoContent(await stack.request('DELETE', client.shipmentPath(tenant, target.shipmentId), { token: tenant.token }));

      await expectReleased(deviceId);
    });

    it('DELETE of a set frees its devices only', async () => {
      const target = await newShipmentWithSet(tenant);
      const kept = await newSet(target);
      const deviceId = await newDevice(tenant);
      const keptDevice = await newDevice(tenant);
      expectNoContent(await assign(target, deviceId));
      expectNoContent(await assign(kept, keptDevice));

      expectNoContent(await stack.request('DELETE', `${setsPath(tenant, target.shipmentId)}/${target.setId}`, { token: tenant.token }));

      await expectReleased(deviceId);
      expect((await device(tenant, keptDevice)).body).toMatchObject({ status: 'Assigned', setId: kept.setId });
    });
  });

  describe('retiring', () => {
    it('refuses an assigned device with 409 DeviceAssigned, and retires it once unassigned', async () => {
      const target = await newShipmentWithSet(tenant);
      const { device: created, path } = await createDevice(stack, tenant);
      expectNoContent(await assign(target, created.id));

      expectError(await stack.request('POST', `${path}/retire`, { token: tenant.token }), 409, 'DeviceAssigned');
      expectNoContent(await unassign(target, created.id));
      expectNoContent(await stack.request('POST', `${path}/retire`, { token: tenant.token }));
      expectError(await assign(target, created.id), 409, 'DeviceRetired');
    });
  });
});

describe('device assignment with two OMS and two DMS replicas', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  const client = assignmentClient(() => stack);

  beforeAll(async () => {
    stack = await TestStack.start({ omsReplicas: 2, dmsReplicas: 2 });
    tenant = await createTenant(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('lets exactly one of 50 concurrent assignments of one device to 50 shipments win; the others name the winner', async () => {
    const shipments = await createShipments(stack, tenant, 50, { concurrency: 10 });
    const targets = await Promise.all(
      shipments.map(async ({ id }) => ({
        tenant,
        account: 0,
        shipmentId: id,
        setId: (await createSet(stack, tenant, id)).set.id,
      })),
    );
    const deviceId = await client.newDevice(tenant);

    const responses = await Promise.all(targets.map((target) => client.assign(target, deviceId)));

    const winners = targets.filter((_target, index) => responses[index]!.status === 204);
    expect(winners).toHaveLength(1);
    const winner = winners[0]!;
    for (const response of responses.filter((answer) => answer.status !== 204)) {
      expectError(response, 409, 'DeviceAlreadyAssigned', { deviceId, shipmentId: winner.shipmentId });
    }
    expect((await client.device(tenant, deviceId)).body).toMatchObject({
      status: 'Assigned',
      shipmentId: winner.shipmentId,
      setId: winner.setId,
    });
    const sets = await Promise.all(targets.map((target) => client.set(target)));
    expect(sets.filter((found) => found.body.deviceIds.length > 0).map((found) => found.body.id)).toEqual([winner.setId]);
  });

  it('keeps the shipment open when the DMS cannot release its devices (503), and completes it once the DMS is back', async () => {
    const target = await client.newShipmentWithSet(tenant);
    const deviceId = await client.newDevice(tenant);
    expectNoContent(await client.assign(target, deviceId));
    expectNoContent(await client.act(target, 'start', 'deliver'));

    await stack.stopDmsReplicas();
    try {
      expectError(await client.act(target, 'complete'), 503, 'ServiceUnavailable');
      const kept = await client.shipment(target);
      expect(kept.body.status).toBe('Delivered');
      expect(kept.body.completedAt).toBeNull();
    } finally {
      await stack.startDmsReplica();
    }

    expectNoContent(await client.act(target, 'complete'));
    expect((await client.shipment(target)).body.status).toBe('Completed');
    expect((await client.device(tenant, deviceId)).body).toMatchObject({ status: 'Available', shipmentId: null, setId: null });
  });
});

/**
 * A service stopped in the middle of an operation: the DMS goes down while its release of a closing
 * shipment's devices is in flight. Whichever way that falls, no device may stay linked to a closed
 * shipment, and retrying the close after the DMS is back converges.
 */
describe('device assignment when the DMS stops in the middle of a release', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  const client = assignmentClient(() => stack);

  beforeAll(async () => {
    // The OMS gives up on the DMS well before the gateway gives up on the OMS, so the answer the test
    // sees is the outcome of the OMS's transaction.
    stack = await TestStack.start({ env: { OMS_RPC_TIMEOUT_MS: '1000', RPC_TIMEOUT_MS: '10000' } });
    tenant = await createTenant(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** Resolves once some session of the DMS database waits for a row lock; fails after 10 s. */
  async function untilDmsWaitsForALock(observer: pg.Client): Promise<void> {
    for (let attempt = 0; attempt < 400; attempt++) {
      const { rows } = await observer.query<{ waiting: number }>(
        `SELECT count(*)::int AS waiting FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
      );
      if (rows[0]!.waiting > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('the DMS never started releasing the device');
  }

  it('never lets an assignment the OMS gave up on land after the shipment closed', async () => {
    const target = await client.newShipmentWithSet(tenant);
    const other = await client.newShipmentWithSet(tenant);
    const deviceId = await client.newDevice(tenant);
    expectNoContent(await client.act(target, 'start'));

    const holder = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    const observer = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await holder.connect();
    await observer.connect();
    try {
      // The DMS's link waits for the device row, longer than the OMS waits for the DMS.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [deviceId]);
      const assigning = client.assign(target, deviceId);
      await untilDmsWaitsForALock(observer);
      expectError(await assigning, 504, 'GatewayTimeout');
      // The OMS has let go of the shipment: it can close, and its release finds no device yet.
      expectNoContent(await client.act(target, 'cancel'));
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
      await observer.end();
    }

    // Had the late link landed, the device would be linked to the cancelled shipment: this would be 409.
    expectNoContent(await client.assign(other, deviceId));
    expect((await client.device(tenant, deviceId)).body).toMatchObject({ shipmentId: other.shipmentId, setId: other.setId });
  });

  it('refuses, in the DMS itself, a link to a shipment or set released after the OMS sent it', async () => {
    // What an OMS that died (or gave up) right after sending its link request leaves behind: the request
    // reaches the DMS after the shipment was cancelled, or the set deleted, without the OMS's lock.
    const cancelled = await client.newShipmentWithSet(tenant);
    const ongoing = await client.newShipmentWithSet(tenant);
    const deletedSet = await client.newSet(ongoing);
    expectNoContent(await client.act(cancelled, 'cancel'));
    const setPath = `${client.shipmentPath(tenant, ongoing.shipmentId)}/sets/${deletedSet.setId}`;
    expectNoContent(await stack.request('DELETE', setPath, { token: tenant.token }));
    const deviceId = await client.newDevice(tenant);

    const connection = await connect({ servers: stack.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    try {
      const dms = new NatsRpcClient(connection, stack.env.NATS_SUBJECT_PREFIX, 5000);
      const link = (target: ShipmentWithSet) =>
        dms.call(Subjects.dms.devices.assign, {
          tenantId: tenant.tenantId,
          accountId: tenant.accountIds[0]!,
          deviceId,
          shipmentId: target.shipmentId,
          setId: target.setId,
          deadline: Date.now() + 60000,
        } satisfies AssignDeviceRequest);
      await expect(link(cancelled)).rejects.toMatchObject({ code: 'ShipmentClosed' });
      await expect(link(deletedSet)).rejects.toMatchObject({ code: 'SetNotExists' });
    } finally {
      await connection.close();
    }
    expect((await client.device(tenant, deviceId)).body).toMatchObject({ status: 'Available', shipmentId: null });
    expectNoContent(await client.assign(ongoing, deviceId));
  });

  it('never leaves a device linked to a cancelled shipment, and a retried cancel converges', async () => {
    const target = await client.newShipmentWithSet(tenant);
    const deviceId = await client.newDevice(tenant);
    expectNoContent(await client.assign(target, deviceId));
    expectNoContent(await client.act(target, 'start'));

    const holder = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    const observer = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await holder.connect();
    await observer.connect();
    let answer: HttpResult;
    try {
      // Hold the device row so that the DMS's release blocks in the middle of its transaction.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [deviceId]);
      const cancelling = client.act(target, 'cancel');
      await untilDmsWaitsForALock(observer);
      const stopping = stack.stopDmsReplicas();
      await holder.query('ROLLBACK');
      [answer] = await Promise.all([cancelling, stopping]);
    } finally {
      await holder.end();
      await observer.end();
    }
    await stack.startDmsReplica();

    const shipment = (await client.shipment(target)).body;
    const device = (await client.device(tenant, deviceId)).body;
    if (answer.status === 204) {
      expect(shipment.status).toBe('Cancelled');
      expect(device).toMatchObject({ status: 'Available', shipmentId: null });
    } else {
      // The close failed and rolled back; the DMS may or may not have committed its release first.
      expect([503, 504], answer.text).toContain(answer.status);
      expect(shipment.status).toBe('InTransit');
      expect(['Assigned', 'Available']).toContain(device.status);
      expectNoContent(await client.act(target, 'cancel'));
    }
    expect((await client.shipment(target)).body.status).toBe('Cancelled');
    expect((await client.device(tenant, deviceId)).body).toMatchObject({ status: 'Available', shipmentId: null, setId: null });
  });
});
