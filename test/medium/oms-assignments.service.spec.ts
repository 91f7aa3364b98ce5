import { DeviceStatus, ErrorCode, SetKind, ShipmentAction, ShipmentStatus } from '@tracking/contracts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DevicesService } from '../../apps/dms/src/devices/devices.service.js';
import { AssignmentsService } from '../../apps/oms/src/assignments/assignments.service.js';
import { SetsService } from '../../apps/oms/src/sets/sets.service.js';
import { ShipmentsService } from '../../apps/oms/src/shipments/shipments.service.js';
import { connect, deviceInput, type MediumPair, newScope, rejection, startMediumPair, untilWaitingForLock } from '../support/medium.js';

/**
 * AssignmentsService on the OMS's database: the OMS decides the shipment and set checks (and holds the
 * shipment while the DMS links), the real DMS, called in-process, decides the device.
 */
let pair: MediumPair;
let assignments: AssignmentsService;
let shipments: ShipmentsService;
let sets: SetsService;
let devices: DevicesService;

beforeAll(async () => {
  pair = await startMediumPair();
  assignments = pair.oms.get(AssignmentsService);
  shipments = pair.oms.get(ShipmentsService);
  sets = pair.oms.get(SetsService);
  devices = pair.dms.get(DevicesService);
});
afterEach(() => {
  pair.client.down = false;
  pair.client.intercept = undefined;
});
afterAll(() => pair?.close());

type Scope = ReturnType<typeof newScope>;

/** A Planned shipment with one set, and an Available device, all of `scope`. */
async function fixture(scope: Scope) {
  const shipmentId = (await shipments.create({ ...scope, shipment: { name: 'fixture' } })).resource.id;
  const setId = (await sets.create({ ...scope, shipmentId, set: { name: 'pallet', kind: SetKind.Pallet } })).resource.id;
  const deviceId = (await devices.create({ ...scope, device: deviceInput() })).resource.id;
  return { ...scope, shipmentId, setId, deviceId };
}

const deviceOf = async (request: { tenantId: string; accountId: string; deviceId: string }) => (await devices.get(request)).resource;

/** Counts the calls that reach the DMS. */
function countDmsCalls(): { count: number } {
  const counter = { count: 0 };
  pair.client.intercept = (_subject, call) => {
    counter.count += 1;
    return call();
  };
  return counter;
}

describe('AssignmentsService.assign', () => {
  it('links the device to the set, once: assigning again is a no-op', async () => {
    const request = await fixture(newScope());
    await assignments.assign(request);
    await assignments.assign(request);
    expect(await devices.get(request)).toMatchObject({
      version: 2,
      resource: { status: DeviceStatus.Assigned, shipmentId: request.shipmentId, setId: request.setId },
    });
  });

  it('checks in path order without asking the DMS: ShipmentNotExists, then SetNotExists', async () => {
    const request = await fixture(newScope());
    const calls = countDmsCalls();
    const unknownShipment = { ...request, shipmentId: crypto.randomUUID(), setId: crypto.randomUUID() };
    expect((await rejection(assignments.assign(unknownShipment))).code).toBe(ErrorCode.ShipmentNotExists);
    expect((await rejection(assignments.assign({ ...request, shipmentId: 'nope' }))).code).toBe(ErrorCode.ShipmentNotExists);
    expect((await rejection(assignments.assign({ ...request, setId: crypto.randomUUID() }))).code).toBe(ErrorCode.SetNotExists);
    // A set of another shipment of the account is not this shipment's.
    const other = await fixture(request);
    expect((await rejection(assignments.assign({ ...request, setId: other.setId }))).code).toBe(ErrorCode.SetNotExists);
    // Another account's shipment does not exist for this one.
    expect((await rejection(assignments.assign({ ...request, ...newScope() }))).code).toBe(ErrorCode.ShipmentNotExists);
    expect(calls.count).toBe(0);
  });

  it.each([ShipmentAction.Cancel, ShipmentAction.Complete])(
    'refuses assign and unassign on a shipment closed by %s with ShipmentClosed, without asking the DMS',
    async (closing) => {
      const request = await fixture(newScope());
      await assignments.assign(request);
      const path = closing === ShipmentAction.Cancel ? [closing] : [ShipmentAction.Start, ShipmentAction.Deliver, closing];
      for (const action of path) await shipments.transition({ ...request, action });
      const calls = countDmsCalls();
      expect((await rejection(assignments.assign(request))).code).toBe(ErrorCode.ShipmentClosed);
      expect((await rejection(assignments.unassign(request))).code).toBe(ErrorCode.ShipmentClosed);
      // SetNotExists still comes first.
      expect((await rejection(assignments.assign({ ...request, setId: crypto.randomUUID() }))).code).toBe(ErrorCode.SetNotExists);
      expect(calls.count).toBe(0);
      expect((await deviceOf(request)).status).toBe(DeviceStatus.Available);
    },
  );

  it("passes the DMS's refusals on unchanged: DeviceNotExists, DeviceRetired, DeviceAlreadyAssigned with its details", async () => {
    const request = await fixture(newScope());
    expect((await rejection(assignments.assign({ ...request, deviceId: crypto.randomUUID() }))).code).toBe(ErrorCode.DeviceNotExists);
    await devices.retire(request);
    expect((await rejection(assignments.assign(request))).code).toBe(ErrorCode.DeviceRetired);

    const taken = await fixture(newScope());
    await assignments.assign(taken);
    const elsewhere = await fixture(taken);
    const refused = await rejection(assignments.assign({ ...elsewhere, deviceId: taken.deviceId }));
    expect(refused.code).toBe(ErrorCode.DeviceAlreadyAssigned);
    expect(refused.details).toEqual({ deviceId: taken.deviceId, shipmentId: taken.shipmentId });
  });

  it('fails with the DMS unavailable and links nothing', async () => {
    const request = await fixture(newScope());
    pair.client.down = true;
    expect((await rejection(assignments.assign(request))).code).toBe(ErrorCode.ServiceUnavailable);
    pair.client.down = false;
    expect((await deviceOf(request)).status).toBe(DeviceStatus.Available);
  });

  it('lets exactly one of two concurrent assignments of one device to two shipments win', async () => {
    const scope = newScope();
    const first = await fixture(scope);
    const second = await fixture(scope);
    const requests = [first, { ...second, deviceId: first.deviceId }];
    const results = await Promise.allSettled(requests.map((request) => assignments.assign(request)));
    const won = results.findIndex((r) => r.status === 'fulfilled');
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason.code).toBe(ErrorCode.DeviceAlreadyAssigned);
    expect(lost.reason.details).toEqual({ deviceId: first.deviceId, shipmentId: requests[won].shipmentId });
    expect((await deviceOf(first)).shipmentId).toBe(requests[won].shipmentId);
  });

  it('makes a closing transition wait for an assignment in flight, which it then releases', async () => {
    const request = await fixture(newScope());
    let reached!: () => void;
    const inDms = new Promise<void>((resolve) => (reached = resolve));
    let proceed!: () => void;
    const gate = new Promise<void>((resolve) => (proceed = resolve));
    pair.client.intercept = async (subject, call) => {
      if (subject === 'assign') {
        reached();
        await gate;
      }
      return call();
    };
    const assigning = assignments.assign(request);
    await inDms;
    const cancelling = shipments.transition({ ...request, action: ShipmentAction.Cancel });
    const observer = await connect(pair.oms.url);
    try {
      // The cancel waits for the assignment's lock on the shipment instead of closing under it.
      await untilWaitingForLock(observer);
    } finally {
      await observer.end();
    }
    proceed();
    await assigning;
    await cancelling;
    const shipment = JSON.parse((await shipments.get(request)).json.toString()).resource;
    expect(shipment.status).toBe(ShipmentStatus.Cancelled);
    expect(await deviceOf(request)).toMatchObject({ status: DeviceStatus.Available, shipmentId: null });
  });

  it('makes an assignment wait for a closing transition in progress, then refuses it with ShipmentClosed', async () => {
    const request = await fixture(newScope());
    const transition = await connect(pair.oms.url);
    const observer = await connect(pair.oms.url);
    try {
      await transition.query('BEGIN');
      await transition.query(`UPDATE shipments SET status = 'Cancelled', cancelled_at = now(), version = version + 1 WHERE id = $1`, [
        request.shipmentId,
      ]);
      const assigning = rejection(assignments.assign(request));
      await untilWaitingForLock(observer);
      await transition.query('COMMIT');
      expect((await assigning).code).toBe(ErrorCode.ShipmentClosed);
    } finally {
      await transition.end();
      await observer.end();
    }
    expect((await deviceOf(request)).status).toBe(DeviceStatus.Available);
  });
});

describe('AssignmentsService.unassign', () => {
  it('unlinks the device from its set; a second unassign is AssignmentNotExists', async () => {
    const request = await fixture(newScope());
    await assignments.assign(request);
    await assignments.unassign(request);
    expect(await deviceOf(request)).toMatchObject({ status: DeviceStatus.Available, shipmentId: null, setId: null });
    expect((await rejection(assignments.unassign(request))).code).toBe(ErrorCode.AssignmentNotExists);
  });

  it('is AssignmentNotExists for a device on another set of the same shipment, which keeps its link', async () => {
    const request = await fixture(newScope());
    const otherSet = (await sets.create({ ...request, set: { name: 'other', kind: SetKind.Tote } })).resource.id;
    await assignments.assign({ ...request, setId: otherSet });
    expect((await rejection(assignments.unassign(request))).code).toBe(ErrorCode.AssignmentNotExists);
    expect((await deviceOf(request)).setId).toBe(otherSet);
  });
});
