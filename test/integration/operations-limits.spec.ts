import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperationStatus, type Operation } from '@tracking/contracts';
import { RETENTION_LEASE } from '../../apps/oms/src/operations/operation-retention.js';
import { OperationRepository } from '../../apps/oms/src/operations/operation.repository.js';
import {
  bulkRetirePath,
  operationsPath,
  operationPath,
  seedDevices,
  startBulkRetire,
  waitForOperation,
  waitForSettled,
} from '../factories/bulk.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { expectError } from '../support/http-assertions.js';
import { waitUntil } from '../support/ops-endpoints.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/*
 * The limits on what an account keeps in bulk operations: quotas on what it has unfinished (checked
 * under concurrency), and the retention that deletes finished operations, in the OMS and the DMS.
 */

const MAX_UNFINISHED = 3;
const MAX_PENDING_ENTRIES = 250;

async function query<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

describe('quotas of an account on bulk operations', () => {
  let stack: TestStack;

  // No workers: every accepted operation stays Pending, so the quotas fill up deterministically.
  beforeAll(async () => {
    stack = await TestStack.start({
      omsReplicas: 2,
      env: { OPERATIONS_MAX_UNFINISHED: String(MAX_UNFINISHED), OPERATIONS_MAX_PENDING_ENTRIES: String(MAX_PENDING_ENTRIES) },
    });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const retire = (tenant: TestTenant, entries: number, account = 0) =>
    stack.request('POST', bulkRetirePath(tenant, account), {
      token: tenant.token,
      body: { deviceIds: Array.from({ length: entries }, () => randomUUID()) },
    });

  async function unfinishedIn(accountId: string): Promise<number> {
    const rows = await query<{ n: number }>(
      stack.env.OMS_DATABASE_URL!,
      "SELECT count(*)::int AS n FROM operations WHERE account_id = $1 AND status IN ('Pending', 'Running')",
      [accountId],
    );
    return rows[0]!.n;
  }

  it('refuses an operation beyond OPERATIONS_MAX_UNFINISHED with 429, Retry-After and the quota named; a cancel frees a slot', async () => {
    const tenant = await createTenant(stack, { accounts: 2 });
    const accepted: HttpResult[] = [];
    for (let i = 0; i < MAX_UNFINISHED; i++) {
      accepted.push(await retire(tenant, 1));
      expect(accepted[i]!.status, accepted[i]!.text).toBe(202);
    }
    const refused = await retire(tenant, 1);
    expectError(refused, 429, 'RateLimitExceeded', { policy: 'unfinished-operations', limit: MAX_UNFINISHED, current: MAX_UNFINISHED });
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await unfinishedIn(tenant.accountIds[0]!)).toBe(MAX_UNFINISHED);
    // Per account: the tenant's other account has its own quota.
    expect((await retire(tenant, 1, 1)).status).toBe(202);

    const cancelled = await stack.request('POST', `${operationPath(accepted[0]!)}/cancel`, { token: tenant.token });
    expect(cancelled.status).toBe(204);
    expect((await retire(tenant, 1)).status).toBe(202);
    expectError(await retire(tenant, 1), 429, 'RateLimitExceeded', { policy: 'unfinished-operations', limit: MAX_UNFINISHED, current: MAX_UNFINISHED });
  });

  it('refuses entries beyond OPERATIONS_MAX_PENDING_ENTRIES with 429 naming the quota; a request that fits passes', async () => {
    const tenant = await createTenant(stack);
    expect((await retire(tenant, 200)).status).toBe(202);
    const refused = await retire(tenant, 51);
    expectError(refused, 429, 'RateLimitExceeded', {
      policy: 'pending-entries',
      limit: MAX_PENDING_ENTRIES,
      current: 200,
      requested: 51,
    });
    expect(refused.headers.get('retry-after')).toBe('5');
    expect((await retire(tenant, 50)).status).toBe(202);
    expectError(await retire(tenant, 1), 429, 'RateLimitExceeded', { policy: 'pending-entries', limit: MAX_PENDING_ENTRIES, current: 250, requested: 1 });
  });

  it('holds under concurrency: of 12 simultaneous requests on two OMS replicas, exactly the quota passes', async () => {
    const byOperations = await createTenant(stack);
    const answers = await Promise.all(Array.from({ length: 12 }, () => retire(byOperations, 1)));
    expect(answers.filter((answer) => answer.status === 202)).toHaveLength(MAX_UNFINISHED);
    for (const answer of answers.filter((a) => a.status !== 202)) {
      expectError(answer, 429, 'RateLimitExceeded', { policy: 'unfinished-operations', limit: MAX_UNFINISHED, current: MAX_UNFINISHED });
    }
    expect(await unfinishedIn(byOperations.accountIds[0]!)).toBe(MAX_UNFINISHED);

    // 100 entries each: two fit in 250, a third does not.
    const byEntries = await createTenant(stack);
    const bigger = await Promise.all(Array.from({ length: 8 }, () => retire(byEntries, 100)));
    expect(bigger.filter((answer) => answer.status === 202)).toHaveLength(2);
    expect(bigger.filter((answer) => answer.status === 429).every((answer) => answer.body.error.details.policy === 'pending-entries')).toBe(true);
    const pending = await query<{ n: number }>(
      stack.env.OMS_DATABASE_URL!,
      'SELECT coalesce(sum(total - processed), 0)::int AS n FROM operations WHERE account_id = $1',
      [byEntries.accountIds[0]],
    );
    expect(pending[0]!.n).toBe(200);
  });

  it('the retention takes settled operations only, oldest first, in batches bounded by entries', async () => {
    const tenant = await createTenant(stack);
    const ids: string[] = [];
    for (const entries of [3, 2, 1]) ids.push((await retire(tenant, entries)).body.id as string);
    const [oldest, older, unsettled] = ids as [string, string, string];
    // No worker runs here: the first two are made finished 1000 and 998 days ago, the third stays unsettled with an old completed_at.
    await query(
      stack.env.OMS_DATABASE_URL!,
      `UPDATE operations SET status = 'Failed', processed = total, failed = total, settled = true,
              completed_at = now() - make_interval(days => CASE id WHEN $1 THEN 1000 ELSE 998 END)
        WHERE id = ANY($2::uuid[])`,
      [oldest, [oldest, older]],
    );
    await query(stack.env.OMS_DATABASE_URL!, "UPDATE operations SET completed_at = now() - interval '2000 days' WHERE id = $1", [unsettled]);
    const repository = stack.oms[0]!.get(OperationRepository);
    expect(await repository.expiredBatch(30, 4, 1000)).toEqual([oldest]);
    expect(await repository.expiredBatch(30, 5, 1000)).toEqual([oldest, older]);
    expect(await repository.expiredBatch(30, 1, 1000)).toEqual([oldest]);
    expect(await repository.expiredBatch(30, 100, 1)).toEqual([oldest]);
    expect(await repository.expiredBatch(999, 100, 1000)).toEqual([oldest]);
    expect(await repository.deleteSettled([oldest, older, unsettled])).toBe(2);
    expect((await stack.request('GET', `${operationsPath(tenant)}/${unsettled}`, { token: tenant.token })).status).toBe(200);
  });
});

describe('retention of finished operations', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    // The retention job runs every 300 ms here (default: hourly); the retention itself keeps its default of 30 days.
    stack = await TestStack.start({ workers: 2, env: { OPERATIONS_RETENTION_INTERVAL_MS: '300' } });
    tenant = await createTenant(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  async function finishedRetirement(devices: number): Promise<{ path: string; operation: Operation }> {
    const path = await startBulkRetire(stack, tenant, await seedDevices(stack, tenant, devices));
    const operation = await waitForOperation(stack, tenant, path);
    await waitForSettled(stack, operation.id);
    return { path, operation };
  }

  async function finishedDaysAgo(operationId: string, days: number): Promise<void> {
    await query(stack.env.OMS_DATABASE_URL!, `UPDATE operations SET completed_at = now() - make_interval(days => $2) WHERE id = $1`, [
      operationId,
      days,
    ]);
  }

  const entriesOf = async (id: string) =>
    (await query<{ n: number }>(stack.env.OMS_DATABASE_URL!, 'SELECT count(*)::int AS n FROM operation_entries WHERE operation_id = $1', [id]))[0]!.n;
  const outcomesOf = async (id: string) =>
    (await query<{ n: number }>(stack.env.DMS_DATABASE_URL!, 'SELECT count(*)::int AS n FROM operation_outcomes WHERE operation_id = $1', [id]))[0]!
      .n;

  it('deletes an operation finished more than OPERATIONS_RETENTION_DAYS ago, its entries and the DMS outcomes; keeps younger ones', async () => {
    const expired = await finishedRetirement(3);
    const young = await finishedRetirement(2);
    expect(expired.operation.status).toBe(OperationStatus.Succeeded);
    expect([await entriesOf(expired.operation.id), await outcomesOf(expired.operation.id)]).toEqual([3, 3]);

    await finishedDaysAgo(young.operation.id, 29);
    await finishedDaysAgo(expired.operation.id, 31);
    await waitUntil(async () => (await stack.request('GET', expired.path, { token: tenant.token })).status === 404, 'the expired operation is gone');

    expectError(await stack.request('GET', expired.path, { token: tenant.token }), 404, 'OperationNotExists');
    expectError(await stack.request('GET', `${expired.path}/results`, { token: tenant.token }), 404, 'OperationNotExists');
    expect([await entriesOf(expired.operation.id), await outcomesOf(expired.operation.id)]).toEqual([0, 0]);

    const kept = await stack.request('GET', young.path, { token: tenant.token });
    expect(kept.status).toBe(200);
    expect([await entriesOf(young.operation.id), await outcomesOf(young.operation.id)]).toEqual([2, 2]);
  });

  it('runs on one worker at a time, the holder of its lease, whichever number of workers run', async () => {
    const members = await query<{ member: string }>(stack.env.OMS_DATABASE_URL!, 'SELECT member FROM lease_members WHERE lease_group = $1 AND expires_at > now()', [RETENTION_LEASE]);
    expect(members).toHaveLength(2);
    const leases = await query<{ owner: string }>(stack.env.OMS_DATABASE_URL!, 'SELECT owner FROM leases WHERE name = $1 AND expires_at > now()', [RETENTION_LEASE]);
    expect(leases).toHaveLength(1);
    expect(members.map((row) => row.member)).toContain(leases[0]!.owner);
  });
});
