import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type Operation, OperationStatus } from '@tracking/contracts';
import { takeoverSettings } from '../../apps/oms/src/operations/operation-worker.js';
import { seedDevices, startBulkRetire, waitForOperation } from '../factories/bulk.factory.js';
import { createTenant } from '../factories/identity.factory.js';
import { type HeldLock, holdRow, lockWaiters, waitUntil } from '../support/ops-endpoints.js';
import { killServices, spawnService } from '../support/processes.js';
import { TestStack } from '../support/stack.js';

/*
 * A worker killed (SIGKILL) in the middle of an operation: another worker, already running, takes the
 * operation over within WORKER_LOCK_DURATION_MS. With BullMQ's lock duration and stalled check both at
 * that value, the takeover took 1.75 to 2.5 times as long (53-76 s for 30 s).
 */

const BOUND_MS = 4000;
/** WORKER_LOCK_DURATION_MS when it is not set. */
const DEFAULT_BOUND_MS = 30000;
/** What the measurement adds to the takeover itself: the job's pickup, one chunk, and this test's polling. */
const MARGIN_MS = 1000;
const CHUNK = 100;
/** An entry of the third chunk: two chunks are recorded when the killed worker blocks on it. */
const HELD_ENTRY = 250;

let stack: TestStack | undefined;
let held: HeldLock | undefined;
afterEach(async () => {
  await held?.release();
  await killServices();
  await stack?.stop();
  stack = undefined;
});

async function processedOf(url: string, operationId: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ processed: number }>('SELECT processed FROM operations WHERE id = $1', [operationId]);
    return rows[0]!.processed;
  } finally {
    await client.end();
  }
}

describe("a killed worker's operation", { timeout: 180000 }, () => {
  it.each([
    ['set to', BOUND_MS, { WORKER_LOCK_DURATION_MS: String(BOUND_MS) }],
    ['at its default,', DEFAULT_BOUND_MS, {}],
  ] as const)('is taken over by another worker within WORKER_LOCK_DURATION_MS, %s %i ms', async (_, bound, env) => {
    stack = await TestStack.start({ env: { ...env, WORKER_CHUNK_SIZE: String(CHUNK) } });
    const tenant = await createTenant(stack);
    const devices = await seedDevices(stack, tenant, 1000);

    // The doomed worker is the only one when the operation arrives, so it takes it; it blocks in the DMS on chunk 3.
    held = await holdRow(stack.env.DMS_DATABASE_URL!, 'SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [devices[HELD_ENTRY]]);
    const doomed = await spawnService(stack, 'worker');
    const path = await startBulkRetire(stack, tenant, devices);
    const operationId = path.split('/').pop()!;
    await waitUntil(async () => (await lockWaiters(stack!.env.DMS_DATABASE_URL!, 'dms')) > 0, 'the worker blocked on chunk 3');
    // The survivor runs before the kill, as other replicas do in production.
    await stack.startWorker();

    await doomed.kill9();
    const killedAt = Date.now();
    await held.release();
    expect(await processedOf(stack.env.OMS_DATABASE_URL!, operationId)).toBe(2 * CHUNK);

    await waitUntil(
      async () => (await processedOf(stack!.env.OMS_DATABASE_URL!, operationId)) > 2 * CHUNK,
      'another worker recorded chunk 3',
      bound * 4,
    );
    const takeoverMs = Date.now() - killedAt;
    expect(takeoverMs, `taken over after ${takeoverMs} ms`).toBeLessThanOrEqual(bound + MARGIN_MS);

    const finished: Operation = await waitForOperation(stack, tenant, path);
    expect(finished).toMatchObject({ status: OperationStatus.Succeeded, progress: { total: 1000, processed: 1000, succeeded: 1000, failed: 0 } });
  });
});

describe('takeover settings', () => {
  it('put the lock lapse plus two stalled checks at the bound, for the default of 30 s too', () => {
    for (const bound of [DEFAULT_BOUND_MS, BOUND_MS, 500]) {
      const { lockDuration, stalledInterval } = takeoverSettings(bound);
      expect(lockDuration + 2 * stalledInterval).toBeLessThanOrEqual(bound);
      expect(lockDuration + 2 * stalledInterval).toBeGreaterThan(bound - 4);
    }
    expect(takeoverSettings(30000)).toEqual({ lockDuration: 15000, stalledInterval: 7500 });
  });
});
