import { type Device, ErrorCode, type Shipment } from '@tracking/contracts';
import { runInRequestContext } from '@tracking/core';
import pg from 'pg';
import { DataSource, type EntityManager } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEADLINE_MARGIN_MS, sampleSize, TrackRepository } from '../../apps/dms/src/tracks/track.repository.js';
import { assignDevice, createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { eventually } from '../support/eventually.js';
import { expectError } from '../support/http-assertions.js';
import { TestStack } from '../support/stack.js';

/** The positions of the large track: one every 50 ms from its device's assignment on. */
const POSITIONS = 100_000;
const STEP_MS = 50;

/**
 * What a track request may cost (docs/tracks.md, "Cost"): its statements end before the caller's
 * deadline, one tenant has at most TRACK_CONCURRENCY_PER_TENANT tracks read at once, and what the DMS
 * reads and simplifies is bounded by maxPoints, not by the positions stored.
 */
describe('the cost of a track request', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;
  let dms: pg.Client;
  let locker: pg.Client;
  let shipment: Shipment;
  let device: Device;
  let start: number;

  beforeAll(async () => {
    stack = await TestStack.start({ componentEnv: { dms: { TRACK_CONCURRENCY_PER_TENANT: '1' } } });
    tenant = await createTenant(stack);
    other = await createTenant(stack);
    dms = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    locker = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await dms.connect();
    await locker.connect();
    shipment = await createShipment(stack, tenant);
    const { set } = await createSet(stack, tenant, shipment.id);
    device = (await createDevice(stack, tenant)).device;
    start = await assignDevice(stack, tenant, set, device.id);
    // Written straight into the DMS's table: sending 100000 readings through the API would take the test's time.
    await dms.query(
      `INSERT INTO readings (id, tenant_id, account_id, device_id, recorded_at, received_at, lat, lng, accuracy_meters)
       SELECT gen_random_uuid(), $1, $2, $3, to_timestamp(0) + ($4::bigint + i * $5::bigint) * interval '1 millisecond', now(),
              48 + i * 0.00001, 11 + sin(i / 50.0) * 0.01, 5
         FROM generate_series(1, $6) AS i`,
      [tenant.tenantId, tenant.accountIds[0], device.id, start, STEP_MS, POSITIONS],
    );
  });
  afterAll(async () => {
    await locker?.end();
    await dms?.end();
    await stack?.stop();
  });

  const trackPath = (query = '', account = tenant.accountIds[0]) => `/v1/accounts/${account}/shipments/${shipment.id}/track${query}`;
  /** The DMS's track statements PostgreSQL is running now (waiting for a lock counts as running). */
  async function runningTrackStatements(): Promise<{ pid: number; query: string; wait_event_type: string | null }[]> {
    const { rows } = await dms.query(
      `SELECT pid, query, wait_event_type FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%FROM readings r%'`,
    );
    return rows;
  }
  /** Holds readings under an exclusive lock, so that every track statement waits for it, until `release`. */
  async function lockReadings(): Promise<{ release: () => Promise<void> }> {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE readings IN ACCESS EXCLUSIVE MODE');
    return { release: async () => void (await locker.query('ROLLBACK')) };
  }

  it('cannot outlive its deadline: after the 504 nothing of it runs on in PostgreSQL', async () => {
    // A second: even a request that took long to reach the DMS keeps half of it, long enough to be seen waiting.
    const hurried = await stack.startGatewayReplica({ RPC_TIMEOUT_MS: '1000' });
    const lock = await lockReadings();
    try {
      const pending = stack.request('GET', trackPath(), { token: tenant.token, baseUrl: hurried });
      // The statement reached PostgreSQL and waits there: without a bound it would wait for the lock as long as it is held.
      await eventually(runningTrackStatements, (rows) => rows.length === 1, 'the track statement waiting for the lock', 5000);
      const response = await pending;
      expectError(response, 504, 'GatewayTimeout');
      expect(await runningTrackStatements()).toEqual([]);
    } finally {
      await lock.release();
    }
  });

  it("ends by the deadline when the DMS first waits for a database connection: the statement gets only what is left", async () => {
    const hurried = await stack.startGatewayReplica({ RPC_TIMEOUT_MS: '400' });
    const pool = (stack.dms[0]!.get(DataSource).driver as unknown as { master: pg.Pool }).master;
    const lock = await lockReadings();
    // Every connection of the DMS's pool busy, as under load: the track read waits for one.
    const busy = await Promise.all(Array.from({ length: pool.options.max }, () => pool.connect()));
    try {
      const pending = stack.request('GET', trackPath(), { token: tenant.token, baseUrl: hurried });
      await eventually(() => pool.waitingCount, (waiting) => waiting >= 1, 'the track read waiting for a connection', 5000);
      // The pool stays busy for most of the 400 ms; then the statement has about 100 ms left, not 350.
      await new Promise((resolve) => setTimeout(resolve, 250));
      for (const client of busy.splice(0)) client.release();
      const response = await pending;
      expectError(response, 504, 'GatewayTimeout');
      expect(await runningTrackStatements()).toEqual([]);
    } finally {
      for (const client of busy) client.release();
      await lock.release();
    }
  });

  it("refuses a tenant's track beyond its concurrent reads with 429 and Retry-After, while another tenant's is read", async () => {
    const otherShipment = await createShipment(stack, other);
    const lock = await lockReadings();
    let released = false;
    try {
      const first = stack.request('GET', trackPath(), { token: tenant.token });
      await eventually(runningTrackStatements, (rows) => rows.length === 1, "the first track's statement waiting for the lock", 5000);

      const second = await stack.request('GET', trackPath('?maxPoints=10'), { token: tenant.token });
      expectError(second, 429, 'RateLimitExceeded', { policy: 'track-reads' });
      expect(second.headers.get('retry-after')).toBe('1');

      // Another tenant's read is not refused: it waits for the lock beside the first.
      const another = stack.request('GET', `/v1/accounts/${other.accountIds[0]}/shipments/${otherShipment.id}/track`, { token: other.token });
      await eventually(runningTrackStatements, (rows) => rows.length === 2, "the other tenant's statement waiting for the lock", 5000);
      await lock.release();
      released = true;
      expect((await first).status).toBe(200);
      expect((await another).status).toBe(200);
      // The slot is free again once the first read ended.
      expect((await stack.request('GET', trackPath('?maxPoints=10'), { token: tenant.token })).status).toBe(200);
    } finally {
      if (!released) await lock.release();
    }
  });

  describe('reads what maxPoints needs, not every position', () => {
    let dataSource: DataSource;
    let repository: TrackRepository;
    beforeAll(async () => {
      dataSource = new DataSource({ type: 'postgres', url: stack.env.DMS_DATABASE_URL, logging: false });
      await dataSource.initialize();
      repository = new TrackRepository(dataSource, 5000);
    });
    afterAll(async () => {
      await dataSource?.destroy();
    });
    const scope = () => ({ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, shipmentId: shipment.id });

    it('returns at most sampleSize(maxPoints) positions of a large track, its first and last among them, and counts them all', async () => {
      for (const maxPoints of [2, 1000, 10000]) {
        const { devices, totalPoints, sampled } = await repository.findPositions({ ...scope(), maxPoints });
        expect(totalPoints).toBe(POSITIONS);
        expect(sampled).toBe(true);
        expect(devices).toHaveLength(1);
        const times = devices[0]!.t;
        // The buckets, and the period's last position.
        expect(times.length).toBeLessThanOrEqual(sampleSize(maxPoints) + 1);
        expect(times.length).toBeGreaterThanOrEqual(sampleSize(maxPoints) * 0.9);
        expect(times[0]).toBe(start + STEP_MS);
        expect(times.at(-1)).toBe(start + POSITIONS * STEP_MS);
        // Distinct positions, in time order.
        for (let i = 1; i < times.length; i++) expect(times[i]).toBeGreaterThan(times[i - 1]!);
      }
    });

    it('reads a window that fits the sample whole', async () => {
      const from = start + 1000 * STEP_MS;
      const { devices, totalPoints, sampled } = await repository.findPositions({ ...scope(), maxPoints: 2, from, to: from + 1500 * STEP_MS });
      expect({ totalPoints, sampled }).toEqual({ totalPoints: 1500, sampled: false });
      expect(devices[0]!.t).toEqual(Array.from({ length: 1500 }, (_, i) => from + i * STEP_MS));
    });

    it('answers the API as before: at most maxPoints points, the endpoints kept, every position counted', async () => {
      const endpoints = await stack.request('GET', trackPath('?maxPoints=2'), { token: tenant.token });
      expect(endpoints.status, endpoints.text).toBe(200);
      expect(endpoints.body.points.map((point: { recordedAt: string }) => Date.parse(point.recordedAt))).toEqual([start + STEP_MS, start + POSITIONS * STEP_MS]);
      expect(endpoints.body.metadata).toEqual({ from: null, to: null, count: 2, totalPoints: POSITIONS, simplified: true });

      const typical = await stack.request('GET', trackPath(), { token: tenant.token });
      expect(typical.body.metadata).toMatchObject({ totalPoints: POSITIONS, simplified: true });
      expect(typical.body.metadata.count).toBeLessThanOrEqual(1000);
      expect(typical.body.metadata.count).toBeGreaterThanOrEqual(900);
    });

    /**
     * A repository whose statements are watched: the `statement_timeout` each is given, and an answer to
     * the count (the read's first statement) that reaches the DMS `lateMs` after PostgreSQL sent it, as
     * on a busy host.
     */
    function watched(lateMs: number): { repository: TrackRepository; timeouts: number[]; statements: string[] } {
      const timeouts: number[] = [];
      const statements: string[] = [];
      const watching = {
        transaction: <T>(work: (manager: EntityManager) => Promise<T>) =>
          dataSource.transaction((manager) =>
            work({
              query: async (sql: string, parameters: unknown[]) => {
                if (sql.includes("set_config('statement_timeout'")) timeouts.push(Number.parseInt(String(parameters[0]), 10));
                else statements.push(sql.includes('count(*)') ? 'count' : 'read');
                const rows: unknown = await manager.query(sql, parameters);
                if (sql.includes('count(*)')) await new Promise((resolve) => setTimeout(resolve, lateMs));
                return rows;
              },
            } as EntityManager),
          ),
      } as DataSource;
      return { repository: new TrackRepository(watching, 5000), timeouts, statements };
    }

    it("gives each statement what is left of the deadline, not the whole: the caller's less the margin, or the default", async () => {
      const withDeadline = watched(1000);
      const { totalPoints } = await runInRequestContext({ deadline: Date.now() + 4000 }, () => withDeadline.repository.findPositions({ ...scope(), maxPoints: 1000 }));
      expect(totalPoints).toBe(POSITIONS);
      expect(withDeadline.statements).toEqual(['count', 'read']);
      expect(withDeadline.timeouts).toHaveLength(2);
      expect(withDeadline.timeouts[0]).toBeLessThanOrEqual(4000 - DEADLINE_MARGIN_MS);
      expect(withDeadline.timeouts[1]).toBeLessThanOrEqual(withDeadline.timeouts[0]! - 1000);

      // Without a deadline, TRACK_QUERY_TIMEOUT_MS (5000 here) bounds the read as a whole.
      const withoutDeadline = watched(1000);
      await withoutDeadline.repository.findPositions({ ...scope(), maxPoints: 1000 });
      expect(withoutDeadline.timeouts[0]).toBeLessThanOrEqual(5000);
      expect(withoutDeadline.timeouts[1]).toBeLessThanOrEqual(withoutDeadline.timeouts[0]! - 1000);
    });

    it('does not start a statement once the deadline has passed, and answers GatewayTimeout', async () => {
      const late = watched(1000);
      const reading = runInRequestContext({ deadline: Date.now() + 500 }, () => late.repository.findPositions({ ...scope(), maxPoints: 1000 }));
      await expect(reading).rejects.toMatchObject({ code: ErrorCode.GatewayTimeout });
      expect(late.statements).toEqual(['count']);

      const passed = watched(0);
      const refused = runInRequestContext({ deadline: Date.now() + DEADLINE_MARGIN_MS - 10 }, () => passed.repository.findPositions({ ...scope(), maxPoints: 1000 }));
      await expect(refused).rejects.toMatchObject({ code: ErrorCode.GatewayTimeout });
      expect(passed.statements).toEqual([]);
    });
  });
});
