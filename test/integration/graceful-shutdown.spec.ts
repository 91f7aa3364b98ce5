import { randomUUID } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { Operation } from '@tracking/contracts';
import { bulkRetirePath, operationPath, seedDevices, waitForOperation } from '../factories/bulk.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createShipment, createShipments } from '../factories/shipment.factory.js';
import { connectionRefused, getOps, type HeldLock, holdRow, lockWaiters, waitUntil } from '../support/ops-endpoints.js';
import { killServices, spawnService } from '../support/processes.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/**
 * SIGTERM under load, against the processes as they run in production (the built entry points).
 * "In flight" is made certain rather than hoped for: PATCHes of a shipment the test holds locked in the
 * OMS database (or a worker's chunk waiting for a device row in the DMS database) wait inside the
 * process that gets the signal, and the test releases the lock only once the process has stopped
 * taking new work.
 */

/** Long enough that no request of these tests times out at the gateway on a busy machine. */
const STACK_ENV = { RPC_TIMEOUT_MS: '60000' };

let stack: TestStack | undefined;
const held: HeldLock[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((lock) => lock.release()));
  await killServices();
  await stack?.stop();
  stack = undefined;
});

async function lockShipment(stack: TestStack, shipmentId: string): Promise<HeldLock> {
  const lock = await holdRow(stack.env.OMS_DATABASE_URL!, 'SELECT 1 FROM shipments WHERE id = $1 FOR UPDATE', [shipmentId]);
  held.push(lock);
  return lock;
}

/** Sends `count` PATCHes of the locked shipment and resolves once each waits for the lock in an OMS handler. */
async function patchesWaitingForLock(
  stack: TestStack,
  tenant: TestTenant,
  shipmentId: string,
  count: number,
  baseUrl?: string,
): Promise<{ answers: Promise<HttpResult[]>; settled: () => boolean }> {
  const path = `/v1/accounts/${tenant.accountIds[0]}/shipments/${shipmentId}`;
  let settled = false;
  const answers = Promise.all(
    Array.from({ length: count }, (_, index) =>
      stack.request('PATCH', path, { token: tenant.token, body: { name: `Renamed ${index}` }, baseUrl }),
    ),
  ).finally(() => (settled = true));
  await waitUntil(async () => (await lockWaiters(stack.env.OMS_DATABASE_URL!, 'oms')) === count, `${count} PATCHes wait for the lock`);
  return { answers, settled: () => settled };
}

describe('graceful shutdown on SIGTERM', { timeout: 180000 }, () => {
  it('of one of two OMS replicas under load: every request succeeds, those in flight on it included, and it exits 0', async () => {
    stack = await TestStack.start({ omsReplicas: 0, env: STACK_ENV });
    const leaving = await spawnService(stack, 'oms');
    const tenant = await createTenant(stack);
    const locked = await createShipment(stack, tenant);
    const readable = await createShipments(stack, tenant, 5);

    // While `leaving` is the only replica, two PATCHes reach it and wait for the locked row.
    const lock = await lockShipment(stack, locked.id);
    const inFlight = await patchesWaitingForLock(stack, tenant, locked.id, 2);
    const staying = await spawnService(stack, 'oms');

    // About 20 requests at a time, creates and reads, until told to stop.
    const failures: string[] = [];
    let answered = 0;
    let loading = true;
    const account = `/v1/accounts/${tenant.accountIds[0]}`;
    const client = async (index: number) => {
      for (let round = 0; loading; round++) {
        const read = readable[(index + round) % readable.length]!;
        const response =
          round % 3 === 0
            ? await stack!.request('POST', `${account}/shipments`, { token: tenant.token, body: { name: `Load ${index}.${round}` } })
            : round % 3 === 1
              ? await stack!.request('GET', `${account}/shipments/${read.id}`, { token: tenant.token })
              : await stack!.request('GET', `${account}/shipments?limit=5`, { token: tenant.token });
        answered++;
        if (response.status < 200 || response.status > 299) failures.push(`${response.status} ${response.text}`);
      }
    };
    const load = Promise.all(Array.from({ length: 20 }, (_, index) => client(index)));
    await waitUntil(() => answered >= 40, 'the load is under way');

    const exit = leaving.terminate();
    await leaving.waitForOutput('NATS subscriptions drained');
    expect((await getOps(leaving.opsUrl, '/health/ready')).body).toMatchObject({ status: 'stopping' });
    // The replica has left the queue group; the load goes on, answered by the other one alone.
    const beforeDrained = answered;
    await waitUntil(() => answered >= beforeDrained + 40, 'the load goes on without the leaving replica');
    expect(inFlight.settled()).toBe(false);

    await lock.release();
    expect((await inFlight.answers).map((answer) => answer.status)).toEqual([200, 200]);
    expect(await exit, leaving.output()).toBe(0);
    loading = false;
    await load;
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(80);
    expect(leaving.output()).toContain('"msg":"stopped"');
    // The other replica served on, unaffected.
    expect((await getOps(staying.opsUrl, '/health/ready')).status).toBe(200);
  });

  it('of a gateway with requests in flight: they complete, new connections are refused, and it exits 0', async () => {
    stack = await TestStack.start({ env: STACK_ENV });
    const gateway = await spawnService(stack, 'gateway');
    const port = Number(new URL(gateway.baseUrl!).port);
    const tenant = await createTenant(stack);
    const locked = await createShipment(stack, tenant);

    const lock = await lockShipment(stack, locked.id);
    const inFlight = await patchesWaitingForLock(stack, tenant, locked.id, 3, gateway.baseUrl);

    const exit = gateway.terminate();
    // Out of the load balancer at once, then no new connection is accepted, while the three still wait.
    await waitUntil(async () => (await getOps(gateway.opsUrl, '/health/ready')).status === 503, 'the gateway reports not ready');
    await waitUntil(() => connectionRefused(port), 'the gateway refuses new connections');
    expect(inFlight.settled()).toBe(false);

    await lock.release();
    const answers = await inFlight.answers;
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(await exit, gateway.output()).toBe(0);
    expect(gateway.output()).toContain('"msg":"stopped"');
  });

  it('of a gateway with an idle keep-alive connection: a request sent on it after the signal is answered with Connection: close, not reset', async () => {
    stack = await TestStack.start({ env: STACK_ENV });
    const gateway = await spawnService(stack, 'gateway', { HTTP_DRAIN_MS: '15000' });
    const tenant = await createTenant(stack);
    // One connection, kept alive between the two requests.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (method: string, path: string, body?: object) =>
      new Promise<{ status: number; connection: string | undefined; reused: boolean; body: string }>((resolve, reject) => {
        const request = httpRequest(new URL(path, gateway.baseUrl), {
          method,
          agent,
          headers: { authorization: `Bearer ${tenant.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        });
        request.on('response', (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          response.on('end', () =>
            resolve({ status: response.statusCode ?? 0, connection: response.headers.connection, reused: request.reusedSocket, body: text }),
          );
        });
        request.on('error', reject);
        request.end(body ? JSON.stringify(body) : undefined);
      });
    try {
      const first = await send('GET', `/v1/accounts/${tenant.accountIds[0]}/shipments`);
      expect(first).toMatchObject({ status: 200, connection: 'keep-alive', reused: false });

      const exit = gateway.terminate();
      await gateway.waitForOutput('shutting down');
      // The connection, idle when the signal came, still takes a request: the answer closes it.
      const second = await send('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { name: 'After SIGTERM' });
      expect(second, second.body).toMatchObject({ status: 201, connection: 'close', reused: true });
      // With its last connection closed, the gateway does not wait out the drain.
      const answeredAt = performance.now();
      expect(await exit, gateway.output()).toBe(0);
      expect(performance.now() - answeredAt).toBeLessThan(10000);
    } finally {
      agent.destroy();
    }
  });

  it('of a worker in the middle of a chunk: the chunk completes, the job goes back to the queue, and it exits 0', async () => {
    stack = await TestStack.start({ env: { ...STACK_ENV, WORKER_CHUNK_SIZE: '500' } });
    const tenant = await createTenant(stack);
    const deviceIds = await seedDevices(stack, tenant, 1500);
    const requestId = `shutdown-bulk-${randomUUID()}`;
    const started = await stack.request('POST', bulkRetirePath(tenant), {
      token: tenant.token,
      body: { deviceIds },
      headers: { 'x-request-id': requestId },
    });
    expect(started.status).toBe(202);

    // The second chunk (entries 500..999) waits in the DMS for a device row the test holds.
    const lock = await holdRow(stack.env.DMS_DATABASE_URL!, 'SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [deviceIds[700]]);
    held.push(lock);
    const worker = await spawnService(stack, 'worker');
    await waitUntil(async () => (await lockWaiters(stack!.env.DMS_DATABASE_URL!, 'dms')) === 1, 'the second chunk waits in the DMS');

    const exit = worker.terminate();
    // The lock goes once the worker has told its operations to stop, so the chunk completes after that.
    await worker.waitForOutput('operations worker stopping');
    await lock.release();
    expect(await exit, worker.output()).toBe(0);
    const handedBack = worker
      .lines()
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.msg === 'operation handed back to the queue');
    expect(handedBack, worker.output()).toMatchObject({ requestId });
    const meanwhile = (await stack.request('GET', operationPath(started), { token: tenant.token })).body as Operation;
    expect(meanwhile.progress.processed).toBe(1000);

    // Another worker continues from the recorded progress; every device is retired exactly once.
    await stack.startWorker();
    const finished = await waitForOperation(stack, tenant, operationPath(started));
    expect(finished).toMatchObject({ status: 'Succeeded', progress: { total: 1500, processed: 1500, succeeded: 1500, failed: 0 } });
    expect(await deviceVersions(stack, deviceIds)).toEqual([{ version: 2, devices: 1500 }]);
  });
});

/** How many of the devices are at each version: a device retired once has version 2. */
async function deviceVersions(stack: TestStack, deviceIds: string[]): Promise<{ version: number; devices: number }[]> {
  const client = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ version: number; devices: number }>(
      'SELECT version, count(*)::int AS devices FROM devices WHERE id = ANY($1::uuid[]) GROUP BY version ORDER BY version',
      [deviceIds],
    );
    return rows;
  } finally {
    await client.end();
  }
}
