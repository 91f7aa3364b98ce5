import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { type AssignDeviceRequest, type ReleaseDevicesRequest, Subjects } from '@tracking/contracts';
import { NatsRpcClient } from '@tracking/messaging';
import pg from 'pg';
import { startBulkAssign, waitForOperation } from '../factories/bulk.factory.js';
import { createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createSet, setsPath } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { expectError } from '../support/http-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/**
 * Closing a shipment (cancel, complete, DELETE) or deleting a set asks the DMS to release the devices
 * inside the OMS's transaction. Whichever way a paused DMS makes that fall (it records nothing before the
 * OMS gives up, it records and the OMS's transaction still rolls back, it gets to the release only after
 * the OMS's deadline), the two services end up agreeing: an open shipment and an existing set take
 * devices, a closed shipment answers ShipmentClosed and a deleted set SetNotExists.
 *
 * The DMS is "paused" by holding, from the test, a lock its release needs: the shipment's link lock
 * (taken before the release records anything) or a device row (taken after it recorded the release).
 */
describe('closing or deleting while the DMS is paused', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let observer: pg.Client;

  beforeAll(async () => {
    // The OMS gives up on the DMS (OMS_RPC_TIMEOUT_MS) well before the gateway gives up on the OMS, so the
    // answer is the outcome of the OMS's transaction. One host, one clock: no skew to allow for.
    stack = await TestStack.start({ workers: 1, env: { OMS_RPC_TIMEOUT_MS: '3000', RPC_TIMEOUT_MS: '10000', DMS_CLOCK_SKEW_MS: '0' } });
    tenant = await createTenant(stack);
    observer = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await observer.connect();
  });
  afterAll(async () => {
    await observer?.end();
    await stack?.stop();
  });

  const account = () => tenant.accountIds[0]!;
  const shipmentPath = (shipmentId: string) => `/v1/accounts/${account()}/shipments/${shipmentId}`;
  const send = (method: string, path: string) => stack.request(method, path, { token: tenant.token });
  const newDevice = async () => (await createDevice(stack, tenant)).device.id;
  const assignmentPath = (target: Target, deviceId: string) => `${setsPath(tenant, target.shipmentId)}/${target.setId}/devices/${deviceId}`;
  const assign = (target: Target, deviceId: string) => send('PUT', assignmentPath(target, deviceId));
  const device = async (deviceId: string) => (await send('GET', `/v1/accounts/${account()}/devices/${deviceId}`)).body;

  interface Target {
    shipmentId: string;
    setId: string;
  }

  async function newTarget(): Promise<Target> {
    const shipmentId = (await createShipment(stack, tenant)).id;
    return { shipmentId, setId: (await createSet(stack, tenant, shipmentId)).set.id };
  }

  /** A fresh device linked to the target, through the API. */
  async function linkedDevice(target: Target): Promise<string> {
    const deviceId = await newDevice();
    expectNoContent(await assign(target, deviceId));
    return deviceId;
  }

  /** Polls the DMS database until `condition` holds for its sessions other than ours; fails after 10 s. */
  async function untilDms(condition: string, what: string, exclude: pg.Client[] = []): Promise<void> {
    const pids = await Promise.all(exclude.map(async (client) => (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid));
    for (let attempt = 0; attempt < 400; attempt++) {
      const { rows } = await observer.query<{ holds: boolean }>(
        `SELECT ${condition} AS holds FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> ALL($1::int[])`,
        [pids],
      );
      if (rows[0]!.holds) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`the DMS never got to: ${what}`);
  }
  /** Resolves once some DMS session waits for a lock (the paused release). */
  const untilDmsWaits = () => untilDms(`count(*) FILTER (WHERE wait_event_type = 'Lock') > 0`, 'waiting for the lock');
  /** Resolves once no DMS session but `holder` is inside a transaction: whatever the DMS was doing has ended. */
  const untilDmsIdle = (holder: pg.Client) => untilDms(`count(*) FILTER (WHERE xact_start IS NOT NULL) = 0`, 'the end of its work', [holder]);

  /**
   * Runs `request` while a test session of the DMS database holds what `pause` locks, until the OMS has
   * answered; then lets go and waits until the DMS has finished whatever it still did with the request.
   */
  async function withDmsPaused(pause: (holder: pg.Client) => Promise<void>, request: () => Promise<HttpResult>): Promise<HttpResult> {
    const holder = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await pause(holder);
      const answer = request();
      await untilDmsWaits();
      const result = await answer;
      await holder.query('ROLLBACK');
      await untilDmsIdle(holder);
      return result;
    } finally {
      await holder.end();
    }
  }
  /** Pauses the DMS before its release records anything: the shipment's link lock. */
  const beforeItRecords = (shipmentId: string) => async (holder: pg.Client) => {
    await holder.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`links:${shipmentId}`]);
  };
  /** Pauses the DMS after its release recorded the shipment or set as released: a device row it unlinks. */
  const afterItRecords = (deviceId: string) => async (holder: pg.Client) => {
    await holder.query('SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [deviceId]);
  };

  /** The shipment is open in both services: it takes a new device, and a real cancel then closes it for good. */
  async function expectOpenEverywhere(target: Target, status: string): Promise<void> {
    expect((await send('GET', shipmentPath(target.shipmentId))).body.status).toBe(status);
    const deviceId = await newDevice();
    expectNoContent(await assign(target, deviceId));
    expectNoContent(await send('POST', `${shipmentPath(target.shipmentId)}/cancel`));
    expectError(await assign(target, await newDevice()), 409, 'ShipmentClosed');
    expect(await device(deviceId)).toMatchObject({ status: 'Available', shipmentId: null });
  }

  /** The set exists in both services: GET finds it and it takes a device; a real delete then removes it everywhere. */
  async function expectSetEverywhere(target: Target): Promise<void> {
    const setPath = `${setsPath(tenant, target.shipmentId)}/${target.setId}`;
    expect((await send('GET', setPath)).status).toBe(200);
    const deviceId = await newDevice();
    expectNoContent(await assign(target, deviceId));
    expectNoContent(await send('DELETE', setPath));
    expectError(await send('GET', setPath), 404, 'SetNotExists');
    expectError(await assign(target, await newDevice()), 404, 'SetNotExists');
    expect(await device(deviceId)).toMatchObject({ status: 'Available', shipmentId: null });
  }

  it.each([
    ['before it records the release', (target: Target) => beforeItRecords(target.shipmentId)],
    ['after it recorded the release, until past the deadline', (_: Target, deviceId: string) => afterItRecords(deviceId)],
  ] as const)('a cancel that times out with the DMS paused %s leaves the shipment open in both services', async (_, pauseAt) => {
    const target = await newTarget();
    const deviceId = await linkedDevice(target);
    const pause = pauseAt(target, deviceId);
    const answer = await withDmsPaused(pause, () => send('POST', `${shipmentPath(target.shipmentId)}/cancel`));
    expectError(answer, 504, 'GatewayTimeout');
    // The DMS got to the release only after the OMS's deadline: it kept the link too.
    expect(await device(deviceId)).toMatchObject({ status: 'Assigned', shipmentId: target.shipmentId, setId: target.setId });
    await expectOpenEverywhere(target, 'Planned');
  });

  it('a set deletion that times out with the DMS paused leaves the set in both services', async () => {
    const target = await newTarget();
    const deviceId = await linkedDevice(target);
    const setPath = `${setsPath(tenant, target.shipmentId)}/${target.setId}`;
    expectError(await withDmsPaused(afterItRecords(deviceId), () => send('DELETE', setPath)), 504, 'GatewayTimeout');
    expect(await device(deviceId)).toMatchObject({ status: 'Assigned', setId: target.setId });
    await expectSetEverywhere(target);
  });

  it('an unassignment that times out with the DMS paused leaves the device assigned', async () => {
    const target = await newTarget();
    const deviceId = await linkedDevice(target);
    const answer = await withDmsPaused(afterItRecords(deviceId), () => send('DELETE', assignmentPath(target, deviceId)));
    expectError(answer, 504, 'GatewayTimeout');
    expect(await device(deviceId)).toMatchObject({ status: 'Assigned', shipmentId: target.shipmentId, setId: target.setId });
    expectNoContent(await send('DELETE', assignmentPath(target, deviceId)));
  });

  it('a close whose OMS transaction fails after the DMS released the devices leaves the shipment open in both services', async () => {
    const target = await newTarget();
    const deviceId = await linkedDevice(target);
    expectNoContent(await send('POST', `${shipmentPath(target.shipmentId)}/start`));
    const holder = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    const oms = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
    await holder.connect();
    await oms.connect();
    let answer: HttpResult;
    try {
      // The DMS records the release and waits for the device row; meanwhile the OMS loses the session
      // that holds the shipment locked. Let go well before the deadline: the DMS commits its release and
      // answers, and the OMS's transaction cannot commit.
      await holder.query('BEGIN');
      await afterItRecords(deviceId)(holder);
      const cancelling = send('POST', `${shipmentPath(target.shipmentId)}/cancel`);
      await untilDmsWaits();
      // The close's session: idle in its transaction while it waits for the DMS, holding the shipment locked.
      // (Another OMS transaction can be idle at that instant too, such as the outbox relay's waiting for the
      // stream's acknowledgements; it holds no lock on shipments.)
      const { rows } = await oms.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(a.pid) AS ended FROM pg_stat_activity a
          WHERE a.datname = current_database() AND a.state = 'idle in transaction' AND a.pid <> pg_backend_pid()
            AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.relation = 'shipments'::regclass)`,
      );
      expect(rows).toEqual([{ ended: true }]);
      await holder.query('ROLLBACK');
      answer = await cancelling;
      await untilDmsIdle(holder);
    } finally {
      await holder.end();
      await oms.end();
    }
    expectError(answer, 503, 'ServiceUnavailable');
    // The DMS did release the device: its record of the release is there, for a close that never committed.
    expect(await device(deviceId)).toMatchObject({ status: 'Available', shipmentId: null });
    await expectOpenEverywhere(target, 'InTransit');
  });

  describe('a release the DMS recorded for a close or deletion that did not commit', () => {
    let dms: NatsRpcClient;
    let connection: Awaited<ReturnType<typeof connect>>;
    beforeAll(async () => {
      connection = await connect({ servers: stack.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
      dms = new NatsRpcClient(connection, stack.env.NATS_SUBJECT_PREFIX, 5000);
    });
    afterAll(async () => {
      await connection?.close();
    });
    /** What an OMS whose transaction rolled back after the DMS answered leaves behind. */
    const release = (target: Target, setId?: string) =>
      dms.call(Subjects.dms.devices.release, {
        tenantId: tenant.tenantId,
        accountId: account(),
        shipmentId: target.shipmentId,
        setId,
        deadline: Date.now() + 5000,
      } satisfies ReleaseDevicesRequest);

    it('does not keep the open shipment from taking devices, and a later close still guards against late links', async () => {
      const target = await newTarget();
      await release(target);
      const checkedBeforeClose = Date.now();
      await expectOpenEverywhere(target, 'Planned');
      // A link the OMS checked after the stale release but before the real cancel, reaching the DMS after
      // the cancel: the real cancel's release renewed the record, so the DMS refuses it.
      const late = {
        tenantId: tenant.tenantId,
        accountId: account(),
        deviceId: await newDevice(),
        ...target,
        deadline: Date.now() + 5000,
        checkedAt: checkedBeforeClose,
      } satisfies AssignDeviceRequest;
      await expect(dms.call(Subjects.dms.devices.assign, late)).rejects.toMatchObject({ code: 'ShipmentClosed' });
      expect(await device(late.deviceId)).toMatchObject({ status: 'Available', shipmentId: null });
    });

    it('does not keep the existing set from taking devices', async () => {
      const target = await newTarget();
      await release(target, target.setId);
      await expectSetEverywhere(target);
    });

    it('does not keep a bulk assignment from linking devices to the open shipment', async () => {
      const target = await newTarget();
      await release(target);
      const deviceIds = [await newDevice(), await newDevice()];
      const path = await startBulkAssign(stack, tenant, deviceIds.map((deviceId) => ({ setId: target.setId, deviceId })));
      const finished = await waitForOperation(stack, tenant, path);
      expect(finished).toMatchObject({ status: 'Succeeded', progress: { processed: 2, succeeded: 2, failed: 0 } });
      for (const deviceId of deviceIds) expect(await device(deviceId)).toMatchObject({ status: 'Assigned', setId: target.setId });
    });
  });
});

function expectNoContent(response: HttpResult): void {
  expect(response.status, response.text).toBe(204);
}
