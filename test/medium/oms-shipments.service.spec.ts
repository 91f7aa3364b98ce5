import { DeviceStatus, ErrorCode, SetKind, type Shipment, ShipmentAction, ShipmentStatus } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DevicesService } from '../../apps/dms/src/devices/devices.service.js';
import { AssignmentsService } from '../../apps/oms/src/assignments/assignments.service.js';
import { SetsService } from '../../apps/oms/src/sets/sets.service.js';
import { ShipmentsService } from '../../apps/oms/src/shipments/shipments.service.js';
import { deviceInput, type MediumPair, newScope, rejection, startMediumPair } from '../support/medium.js';

/**
 * The shipment lifecycle and the closed-shipment rules as ShipmentsService and SetsService decide them
 * on the OMS's database; the devices they free are released by a real DMS called in-process.
 */
let pair: MediumPair;
let shipments: ShipmentsService;
let sets: SetsService;

beforeAll(async () => {
  pair = await startMediumPair();
  shipments = pair.oms.get(ShipmentsService);
  sets = pair.oms.get(SetsService);
});
afterAll(() => pair?.close());

type Scope = ReturnType<typeof newScope>;

/** The path from Planned to each status. */
const PATH: Record<ShipmentStatus, ShipmentAction[]> = {
  [ShipmentStatus.Planned]: [],
  [ShipmentStatus.InTransit]: [ShipmentAction.Start],
  [ShipmentStatus.Delivered]: [ShipmentAction.Start, ShipmentAction.Deliver],
  [ShipmentStatus.Completed]: [ShipmentAction.Start, ShipmentAction.Deliver, ShipmentAction.Complete],
  [ShipmentStatus.Cancelled]: [ShipmentAction.Cancel],
};

const ALLOWED: [ShipmentStatus, ShipmentAction, ShipmentStatus, keyof Shipment][] = [
  [ShipmentStatus.Planned, ShipmentAction.Start, ShipmentStatus.InTransit, 'departedAt'],
  [ShipmentStatus.InTransit, ShipmentAction.Deliver, ShipmentStatus.Delivered, 'deliveredAt'],
  [ShipmentStatus.Delivered, ShipmentAction.Complete, ShipmentStatus.Completed, 'completedAt'],
  [ShipmentStatus.Planned, ShipmentAction.Cancel, ShipmentStatus.Cancelled, 'cancelledAt'],
  [ShipmentStatus.InTransit, ShipmentAction.Cancel, ShipmentStatus.Cancelled, 'cancelledAt'],
];
const REFUSED = Object.values(ShipmentStatus).flatMap((from) =>
  Object.values(ShipmentAction)
    .filter((action) => !ALLOWED.some(([f, a]) => f === from && a === action))
    .map((action) => [from, action] as const),
);
const STAMPS = ['departedAt', 'deliveredAt', 'completedAt', 'cancelledAt'] as const;

async function read(scope: Scope, shipmentId: string): Promise<{ resource: Shipment; version: number }> {
  return JSON.parse((await shipments.get({ ...scope, shipmentId })).json.toString());
}

async function shipmentIn(scope: Scope, status: ShipmentStatus): Promise<string> {
  const { resource } = await shipments.create({ ...scope, shipment: { name: `in ${status}` } });
  for (const action of PATH[status]) await shipments.transition({ ...scope, shipmentId: resource.id, action });
  return resource.id;
}

async function newSet(scope: Scope, shipmentId: string): Promise<string> {
  return (await sets.create({ ...scope, shipmentId, set: { name: 'pallet', kind: SetKind.Pallet } })).resource.id;
}

/** A device of the DMS linked to the set through the OMS's own assignment. */
async function assignedDevice(scope: Scope, shipmentId: string, setId: string): Promise<string> {
  const { resource } = await pair.dms.get(DevicesService).create({ ...scope, device: deviceInput() });
  await pair.oms.get(AssignmentsService).assign({ ...scope, shipmentId, setId, deviceId: resource.id });
  return resource.id;
}

async function device(scope: Scope, deviceId: string) {
  return (await pair.dms.get(DevicesService).get({ ...scope, deviceId })).resource;
}

describe('ShipmentsService.transition: the state table on a stored shipment', () => {
  it.each(ALLOWED)('%s -%s-> %s sets %s and moves the version by one', async (from, action, to, stamp) => {
    const scope = newScope();
    const shipmentId = await shipmentIn(scope, from);
    const before = await read(scope, shipmentId);
    expect(await shipments.transition({ ...scope, shipmentId, action, expectedVersion: before.version })).toEqual({ version: before.version + 1 });
    const after = await read(scope, shipmentId);
    expect(after.version).toBe(before.version + 1);
    expect(after.resource.status).toBe(to);
    expect(after.resource[stamp]).not.toBeNull();
    // The stamps of earlier steps stay, the others stay null.
    for (const other of STAMPS.filter((s) => s !== stamp)) expect(after.resource[other]).toBe(before.resource[other]);
  });

  it(`refuses the ${REFUSED.length} other pairs with InvalidStateTransition {from, action}, changing nothing`, async () => {
    expect(REFUSED).toHaveLength(15);
    const scope = newScope();
    const byStatus = Object.fromEntries(
      await Promise.all(Object.values(ShipmentStatus).map(async (status) => [status, await shipmentIn(scope, status)] as const)),
    );
    for (const [from, action] of REFUSED) {
      const shipmentId = byStatus[from];
      const before = await read(scope, shipmentId);
      const refused = await rejection(shipments.transition({ ...scope, shipmentId, action }));
      expect(refused.code, `${from} -${action}->`).toBe(ErrorCode.InvalidStateTransition);
      expect(refused.details).toEqual({ from, action });
      expect(await read(scope, shipmentId)).toEqual(before);
    }
  });

  it('checks existence, then the expected version, then the table', async () => {
    const scope = newScope();
    const missing = await rejection(shipments.transition({ ...scope, shipmentId: crypto.randomUUID(), action: ShipmentAction.Start }));
    expect(missing.code).toBe(ErrorCode.ShipmentNotExists);
    const shipmentId = await shipmentIn(scope, ShipmentStatus.Completed);
    const stale = await rejection(shipments.transition({ ...scope, shipmentId, action: ShipmentAction.Start, expectedVersion: 1 }));
    expect(stale.code).toBe(ErrorCode.PreconditionFailed);
    const other = await rejection(shipments.transition({ ...newScope(), shipmentId, action: ShipmentAction.Start }));
    expect(other.code).toBe(ErrorCode.ShipmentNotExists);
  });

  it('lets one of concurrent actions on a shipment win; the others see its status and are refused', async () => {
    const scope = newScope();
    const shipmentId = await shipmentIn(scope, ShipmentStatus.InTransit);
    const actions = [ShipmentAction.Deliver, ShipmentAction.Cancel, ShipmentAction.Deliver, ShipmentAction.Cancel];
    const results = await Promise.allSettled(actions.map((action) => shipments.transition({ ...scope, shipmentId, action })));
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [actions[i]] : []));
    expect(won).toHaveLength(1);
    for (const result of results.filter((r) => r.status === 'rejected')) {
      expect((result as PromiseRejectedResult).reason.code).toBe(ErrorCode.InvalidStateTransition);
    }
    const { resource, version } = await read(scope, shipmentId);
    expect(resource.status).toBe(won[0] === ShipmentAction.Deliver ? ShipmentStatus.Delivered : ShipmentStatus.Cancelled);
    expect(version).toBe(3);
  });
});

describe('closing a shipment frees its devices in the DMS', () => {
  it.each([
    [ShipmentStatus.Delivered, ShipmentAction.Complete],
    [ShipmentStatus.Planned, ShipmentAction.Cancel],
    [ShipmentStatus.InTransit, ShipmentAction.Cancel],
  ])('%s -%s-> releases every device of the shipment, and no other', async (from, action) => {
    const scope = newScope();
    const shipmentId = await shipmentIn(scope, ShipmentStatus.Planned);
    const setId = await newSet(scope, shipmentId);
    const mine = [await assignedDevice(scope, shipmentId, setId), await assignedDevice(scope, shipmentId, await newSet(scope, shipmentId))];
    const otherShipment = await shipmentIn(scope, ShipmentStatus.Planned);
    const theirs = await assignedDevice(scope, otherShipment, await newSet(scope, otherShipment));
    for (const step of PATH[from]) await shipments.transition({ ...scope, shipmentId, action: step });

    await shipments.transition({ ...scope, shipmentId, action });
    for (const id of mine) expect(await device(scope, id)).toMatchObject({ status: DeviceStatus.Available, shipmentId: null, setId: null });
    expect((await device(scope, theirs)).status).toBe(DeviceStatus.Assigned);
    // The DMS refuses any later link to it, whatever the OMS would say.
    const late = await rejection(pair.dms.get(DevicesService).assign({ ...scope, deviceId: mine[0], shipmentId, setId, deadline: Date.now() + 60_000 }));
    expect(late.code).toBe(ErrorCode.ShipmentClosed);
  });

  it('keeps its devices on start and deliver', async () => {
    const scope = newScope();
    const shipmentId = await shipmentIn(scope, ShipmentStatus.Planned);
    const deviceId = await assignedDevice(scope, shipmentId, await newSet(scope, shipmentId));
    await shipments.transition({ ...scope, shipmentId, action: ShipmentAction.Start });
    await shipments.transition({ ...scope, shipmentId, action: ShipmentAction.Deliver });
    expect(await device(scope, deviceId)).toMatchObject({ status: DeviceStatus.Assigned, shipmentId });
  });

  it('stays open with its devices when the DMS is unavailable, and closes once it is back', async () => {
    const scope = newScope();
    const shipmentId = await shipmentIn(scope, ShipmentStatus.Planned);
    const deviceId = await assignedDevice(scope, shipmentId, await newSet(scope, shipmentId));
    const before = await read(scope, shipmentId);
    pair.client.down = true;
    try {
      expect((await rejection(shipments.transition({ ...scope, shipmentId, action: ShipmentAction.Cancel }))).code).toBe(ErrorCode.ServiceUnavailable);
      expect((await rejection(shipments.delete({ ...scope, shipmentId }))).code).toBe(ErrorCode.ServiceUnavailable);
    } finally {
      pair.client.down = false;
    }
    expect(await read(scope, shipmentId)).toEqual(before);
    expect((await device(scope, deviceId)).status).toBe(DeviceStatus.Assigned);
    await shipments.transition({ ...scope, shipmentId, action: ShipmentAction.Cancel });
    expect((await device(scope, deviceId)).status).toBe(DeviceStatus.Available);
  });

  it('deletes an open shipment with its devices released; a closed one is ShipmentClosed', async () => {
    const scope = newScope();
    const shipmentId = await shipmentIn(scope, ShipmentStatus.InTransit);
    const deviceId = await assignedDevice(scope, shipmentId, await newSet(scope, shipmentId));
    await shipments.delete({ ...scope, shipmentId });
    expect((await rejection(shipments.get({ ...scope, shipmentId }))).code).toBe(ErrorCode.ShipmentNotExists);
    expect((await device(scope, deviceId)).status).toBe(DeviceStatus.Available);
    for (const status of [ShipmentStatus.Completed, ShipmentStatus.Cancelled]) {
      const closed = await shipmentIn(scope, status);
      expect((await rejection(shipments.delete({ ...scope, shipmentId: closed }))).code).toBe(ErrorCode.ShipmentClosed);
    }
  });
});

describe('closed shipments take no changes', () => {
  it.each([ShipmentStatus.Completed, ShipmentStatus.Cancelled])('a %s shipment refuses PATCH and every set write with ShipmentClosed', async (status) => {
    const scope = newScope();
    const shipmentId = await shipmentIn(scope, ShipmentStatus.Planned);
    const setId = await newSet(scope, shipmentId);
    for (const step of PATH[status]) await shipments.transition({ ...scope, shipmentId, action: step });
    const before = await read(scope, shipmentId);
    const writes = [
      () => shipments.update({ ...scope, shipmentId, patch: { name: 'renamed' } }),
      () => sets.create({ ...scope, shipmentId, set: { name: 'late', kind: SetKind.Parcel } }),
      () => sets.update({ ...scope, shipmentId, setId, patch: { name: 'renamed' } }),
      () => sets.delete({ ...scope, shipmentId, setId }),
    ];
    for (const write of writes) expect((await rejection(write())).code).toBe(ErrorCode.ShipmentClosed);
    expect(await read(scope, shipmentId)).toEqual(before);
    expect((await sets.get({ ...scope, shipmentId, setId })).resource.name).toBe('pallet');
  });

  it('answers a missing set of a closed shipment with SetNotExists first, and a stale version with PreconditionFailed first', async () => {
    const scope = newScope();
    const shipmentId = await shipmentIn(scope, ShipmentStatus.Planned);
    const setId = await newSet(scope, shipmentId);
    await shipments.transition({ ...scope, shipmentId, action: ShipmentAction.Cancel });
    expect((await rejection(sets.delete({ ...scope, shipmentId, setId: crypto.randomUUID() }))).code).toBe(ErrorCode.SetNotExists);
    expect((await rejection(sets.delete({ ...scope, shipmentId, setId, expectedVersion: 9 }))).code).toBe(ErrorCode.PreconditionFailed);
    expect((await rejection(shipments.update({ ...scope, shipmentId, expectedVersion: 1, patch: {} }))).code).toBe(ErrorCode.PreconditionFailed);
  });
});

describe("sets' device links", () => {
  it("deleting a set releases that set's devices only", async () => {
    const scope = newScope();
    const shipmentId = await shipmentIn(scope, ShipmentStatus.Planned);
    const [doomed, kept] = [await newSet(scope, shipmentId), await newSet(scope, shipmentId)];
    const gone = await assignedDevice(scope, shipmentId, doomed);
    const stays = await assignedDevice(scope, shipmentId, kept);
    await sets.delete({ ...scope, shipmentId, setId: doomed });
    expect((await device(scope, gone)).status).toBe(DeviceStatus.Available);
    expect(await device(scope, stays)).toMatchObject({ status: DeviceStatus.Assigned, setId: kept });
    expect(await pair.dms.get(DevicesService).linked({ ...scope, setIds: [doomed, kept] })).toEqual({ [doomed]: [], [kept]: [stays] });
  });

  it('keeps a set whose devices the DMS cannot release', async () => {
    const scope = newScope();
    const shipmentId = await shipmentIn(scope, ShipmentStatus.Planned);
    const setId = await newSet(scope, shipmentId);
    const deviceId = await assignedDevice(scope, shipmentId, setId);
    pair.client.down = true;
    try {
      expect((await rejection(sets.delete({ ...scope, shipmentId, setId }))).code).toBe(ErrorCode.ServiceUnavailable);
    } finally {
      pair.client.down = false;
    }
    expect((await sets.get({ ...scope, shipmentId, setId })).resource.id).toBe(setId);
    expect((await device(scope, deviceId)).setId).toBe(setId);
  });
});
