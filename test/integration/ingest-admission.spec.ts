import type { Device } from '@tracking/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGatewayConfig } from '../../apps/gateway/src/config.js';
import { IngestAdmission } from '../../apps/gateway/src/protection/ingest-admission/ingest-admission.js';
import { createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { eventually } from '../support/eventually.js';
import { expectError } from '../support/http-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/** Distinct, increasing recordedAt values a little in the past. */
let clock = Date.now() - 3_600_000;
const reading = (device: Device) => ({ deviceId: device.id, recordedAt: new Date(++clock).toISOString(), temperatureC: 4.5 });

/**
 * Fair admission of ingest batches between tenants (docs/readings.md, "Fair admission"), with tiny
 * configured bounds: two readings being stored at once per gateway, one of a tenant. Tenant B's batches are held in the
 * DMS by a lock on its device's row (ingest locks the batch's devices), so a batch stays in progress for
 * as long as a step needs, without sleeps.
 */
describe('ingest admission between tenants', () => {
  let stack: TestStack;
  let a: TestTenant;
  let b: TestTenant;
  let aDevice: Device;
  let bDevice: Device;
  let lock: pg.Client;

  beforeAll(async () => {
    stack = await TestStack.start({
      env: {
        // Room for two readings at once, one of a tenant: each batch below holds one reading.
        INGEST_CAPACITY_READINGS: '2',
        INGEST_TENANT_READINGS: '1',
        INGEST_TENANT_QUEUE: '0',
        // Without the admission a second batch of B would wait for the lock until this timeout (504).
        RPC_TIMEOUT_MS: '10000',
      },
    });
    a = await createTenant(stack);
    b = await createTenant(stack);
    aDevice = (await createDevice(stack, a)).device;
    bDevice = (await createDevice(stack, b)).device;
    lock = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await lock.connect();
  });
  afterAll(async () => {
    await lock?.end();
    await stack?.stop();
  });

  const ingest = (tenant: TestTenant, readings: unknown[], baseUrl?: string): Promise<HttpResult> =>
    stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/readings`, { token: tenant.token, body: { readings }, baseUrl });
  const storedOf = async (tenant: TestTenant, device: Device): Promise<string[]> => {
    const page = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/devices/${device.id}/readings?limit=100`, { token: tenant.token });
    expect(page.status, page.text).toBe(200);
    return page.body.readings.map((stored: { recordedAt: string }) => stored.recordedAt);
  };
  /** Statements of the DMS waiting for a row lock: B's batches held by the test's lock. */
  const heldInDms = async (): Promise<number> => {
    const { rows } = await lock.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
    );
    return rows[0].n;
  };

  /** Holds B's device row until `release` (the batch that reaches it waits); always released at the end. */
  async function holdingB<T>(steps: (release: () => Promise<void>) => Promise<T>): Promise<T> {
    await lock.query('BEGIN');
    await lock.query('SELECT id FROM devices WHERE id = $1 FOR UPDATE', [bDevice.id]);
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await lock.query('ROLLBACK');
    };
    try {
      return await steps(release);
    } finally {
      await release();
    }
  }

  it("refuses a tenant's batch beyond its share with 429 and Retry-After at once, while another tenant's batch is admitted", async () => {
    await holdingB(async (release) => {
      const first = reading(bDevice);
      let heldAnswered = false;
      const held = ingest(b, [first]).finally(() => (heldAnswered = true));
      await eventually(heldInDms, (n) => n === 1, "B's first batch waiting on the device's row in the DMS");

      // B uses its share and may not queue: its next batch is refused at once, nothing stored.
      const refused = await ingest(b, [reading(bDevice)]);
      expectError(refused, 429, 'RateLimitExceeded', { policy: 'ingest-admission' });
      expect(refused.headers.get('retry-after')).toBe('1');

      // Tenant A is admitted at once, on the room B may not take, and stored while B's batch is still held.
      const answer = await ingest(a, [reading(aDevice)]);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toEqual({ accepted: 1, duplicates: 0, unassigned: 1, rejected: [] });
      expect(heldAnswered).toBe(false);

      await release();
      const done = await held;
      expect(done.status, done.text).toBe(200);
      expect(done.body).toEqual({ accepted: 1, duplicates: 0, unassigned: 1, rejected: [] });
      expect(await storedOf(b, bDevice)).toEqual([first.recordedAt]);
    });
    // The room is free again: B's next batch is stored.
    const again = await ingest(b, [reading(bDevice)]);
    expect(again.status, again.text).toBe(200);
    expect(stack.gateway.get(IngestAdmission, { strict: false }).load).toEqual({ running: 0, waiting: 0 });
  });

  it("lets a batch wait for its tenant's share a bounded time: admitted when it frees, 429 after INGEST_QUEUE_TIMEOUT_MS", async () => {
    // A replica of its own with a queue of one per tenant; each replica admits on its own.
    const replica = await stack.startGatewayReplica({ INGEST_TENANT_QUEUE: '1', INGEST_QUEUE_TIMEOUT_MS: '1000' });
    const admission = stack.gatewayReplicas.at(-1)!.get(IngestAdmission, { strict: false });
    await holdingB(async (release) => {
      const first = reading(bDevice);
      const held = ingest(b, [first], replica);
      await eventually(heldInDms, (n) => n === 1, "B's first batch waiting on the device's row in the DMS");
      // Waits its turn, gives up after 1 s with 429 while the first is still held.
      const timedOut = await ingest(b, [reading(bDevice)], replica);
      expectError(timedOut, 429, 'RateLimitExceeded', { policy: 'ingest-admission' });
      expect(timedOut.headers.get('retry-after')).toBe('1');
      expect(admission.load).toEqual({ running: 1, waiting: 0 });

      // Waits its turn and is admitted once the first batch is done.
      const second = reading(bDevice);
      const queued = ingest(b, [second], replica);
      await eventually(() => admission.load, (now) => now.waiting === 1, "B's next batch waiting for its share");
      await release();
      expect((await held).status).toBe(200);
      const admitted = await queued;
      expect(admitted.status, admitted.text).toBe(200);
      expect((await storedOf(b, bDevice)).slice(-2)).toEqual([first.recordedAt, second.recordedAt]);
    });
    expect(admission.load).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses a per-tenant bound above the total at start', () => {
    expect(() => readGatewayConfig({ ...stack.envOf('gateway'), INGEST_CAPACITY_READINGS: '2', INGEST_TENANT_READINGS: '3' })).toThrow(
      'Invalid configuration: INGEST_TENANT_READINGS must be at most INGEST_CAPACITY_READINGS (2)',
    );
  });
});
