import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperationStatus } from '@tracking/contracts';
import { Queue } from 'bullmq';
import pg from 'pg';
import { OPERATIONS_QUEUE, queuePrefix } from '../../apps/oms/src/operations/operation-queue.js';
import { OperationRunner } from '../../apps/oms/src/operations/operation-runner.js';
import { seedDevices, startBulkRetire, waitForOperation } from '../factories/bulk.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { expectError } from '../support/http-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/**
 * A service's database out of reach (its sessions terminated, new ones refused) is a passing outage,
 * not a fault of the request: the API answers 503 ServiceUnavailable with Retry-After, whichever
 * database it is (the OMS's, the DMS's, or the gateway's own for the token endpoint), and the bulk-job
 * worker waits it out without using up the queue's attempts.
 */

/** Terminates every session of the database named by `url` and refuses new ones, until the returned function restores it. */
async function takeDown(url: string): Promise<() => Promise<void>> {
  const name = new URL(url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString() });
  await admin.connect();
  await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
  return async () => {
    try {
      await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
    } finally {
      await admin.end();
    }
  };
}

function expectUnavailable(response: HttpResult): void {
  expectError(response, 503, 'ServiceUnavailable');
  expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
}

describe('a database outage over HTTP', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const send = (method: string, path: string, body?: unknown) => stack.request(method, path, { token: tenant.token, body });
  const account = () => tenant.accountIds[0]!;

  it.each([
    ['OMS', 'OMS_DATABASE_URL', () => `/v1/accounts/${account()}/shipments`, { name: 'Outage' }],
    ['DMS', 'DMS_DATABASE_URL', () => `/v1/accounts/${account()}/devices`, { serialNumber: 'SN-OUTAGE-1', model: 'T1' }],
  ] as const)('the %s database down: reads and writes answer 503 with Retry-After, and work again once it is back', async (_, env, path, body) => {
    const restore = await takeDown(stack.env[env]!);
    try {
      expectUnavailable(await send('GET', path()));
      expectUnavailable(await send('POST', path(), body));
    } finally {
      await restore();
    }
    expect((await send('GET', path())).status).toBe(200);
    expect((await send('POST', path(), body)).status).toBe(201);
  });

  it("the gateway's own database down: the token endpoint answers 503 with Retry-After, and issues tokens again once it is back", async () => {
    const credentials = { tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: tenant.applicationSecret };
    const restore = await takeDown(stack.env.GATEWAY_DATABASE_URL!);
    try {
      expectUnavailable(await stack.request('POST', '/v1/applications/token', { body: credentials }));
    } finally {
      await restore();
    }
    expect((await stack.request('POST', '/v1/applications/token', { body: credentials })).status).toBe(200);
  });
});

describe('a database outage under the bulk-job worker', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let queue: Queue;
  /** Chunk transactions of the worker that failed so far. */
  let failedSteps = 0;

  beforeAll(async () => {
    stack = await TestStack.start({ workers: 1 });
    tenant = await createTenant(stack);
    queue = new Queue(OPERATIONS_QUEUE, { connection: { url: stack.env.REDIS_URL }, prefix: queuePrefix({ REDIS_KEY_PREFIX: stack.env.REDIS_KEY_PREFIX! }) });
    // Counts the worker's failed chunk transactions (each is passed on unchanged): the sign that it met the outage.
    const runner = stack.workers[0]!.get(OperationRunner) as unknown as { step: (operationId: string) => Promise<boolean> };
    const step = runner.step.bind(runner);
    runner.step = (operationId) => step(operationId).catch((error: unknown) => {
      failedSteps += 1;
      throw error;
    });
  });
  afterAll(async () => {
    await queue?.close();
    await stack?.stop();
  });

  it.each([
    ['DMS', 'DMS_DATABASE_URL'],
    ['OMS', 'OMS_DATABASE_URL'],
  ] as const)('the %s database down: the worker waits it out without using an attempt, and the operation completes', async (_, env) => {
    const devices = await seedDevices(stack, tenant, 3);
    const { holder, path, operationId } = await retireHeldInItsChunk(stack, tenant, devices);
    const failedBefore = failedSteps;
    const restore = await takeDown(stack.env[env]!);
    try {
      // The DMS's session was terminated with the rest; else the chunk goes on and meets the OMS gone.
      if (env === 'OMS_DATABASE_URL') await holder.query('ROLLBACK');
      await expect.poll(() => failedSteps - failedBefore, { timeout: 15000, interval: 50 }).toBeGreaterThanOrEqual(3);
      const job = await queue.getJob(operationId);
      expect(job?.attemptsMade).toBe(0);
      expect(await job?.getState()).toBe('active');
    } finally {
      await restore();
      await holder.end().catch(() => undefined);
    }
    const finished = await waitForOperation(stack, tenant, path);
    expect(finished).toMatchObject({ status: OperationStatus.Succeeded, progress: { processed: 3, succeeded: 3, failed: 0 } });
    expect((await queue.getJob(operationId))?.attemptsMade ?? 0).toBeLessThanOrEqual(1);
  });
});

/**
 * Starts a bulk retire of `devices` while a session holds the first device's row, and resolves once the
 * worker's chunk waits for it in the DMS: the worker is in the middle of its chunk when an outage starts.
 */
async function retireHeldInItsChunk(stack: TestStack, tenant: TestTenant, devices: string[]) {
  const holder = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
  holder.on('error', () => undefined);
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [devices[0]]);
  const path = await startBulkRetire(stack, tenant, devices);
  await waitForLockWaiter(stack.env.DMS_DATABASE_URL!);
  return { holder, path, operationId: path.split('/').pop()! };
}

/** Resolves once some session of the database waits for a lock; fails after 10 s. */
async function waitForLockWaiter(url: string): Promise<void> {
  const observer = new pg.Client({ connectionString: url });
  await observer.connect();
  try {
    await expect
      .poll(
        async () =>
          (await observer.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))
            .rows[0]!.n,
        { timeout: 10000, interval: 25 },
      )
      .toBeGreaterThan(0);
  } finally {
    await observer.end();
  }
}

describe('an outage longer than WORKER_OUTAGE_LIMIT_MS', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let queue: Queue;

  beforeAll(async () => {
    stack = await TestStack.start({ workers: 1, env: { WORKER_OUTAGE_LIMIT_MS: '1000' } });
    tenant = await createTenant(stack);
    queue = new Queue(OPERATIONS_QUEUE, { connection: { url: stack.env.REDIS_URL }, prefix: queuePrefix({ REDIS_KEY_PREFIX: stack.env.REDIS_KEY_PREFIX! }) });
  });
  afterAll(async () => {
    await queue?.close();
    await stack?.stop();
  });

  it('uses up an attempt of the job (the queue retries it), and the operation still completes once the database is back', async () => {
    const devices = await seedDevices(stack, tenant, 2);
    const { holder, path, operationId } = await retireHeldInItsChunk(stack, tenant, devices);
    const restore = await takeDown(stack.env.DMS_DATABASE_URL!);
    try {
      await expect.poll(async () => (await queue.getJob(operationId))?.attemptsMade, { timeout: 15000, interval: 100 }).toBe(1);
    } finally {
      await restore();
      await holder.end().catch(() => undefined);
    }
    const finished = await waitForOperation(stack, tenant, path);
    expect(finished).toMatchObject({ status: OperationStatus.Succeeded, progress: { processed: 2, succeeded: 2, failed: 0 } });
  });
});
