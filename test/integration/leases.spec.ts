import { createLogger } from '@tracking/core';
import { randomUUID } from 'node:crypto';
import { assignee, type Lease, LeaseGroup, LeaseLost, partitionSql, type Queryable, readingsPartitionOf } from '@tracking/outbox';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { cloneServiceDatabase, connect } from '../support/medium.js';

/**
 * Leases (docs/leases.md): "one runner at a time" for the OMS's processes, on a clone of the OMS's
 * database. Members are `LeaseGroup`s in this process, each with its own connection, as separate
 * processes would have.
 */
const logger = createLogger('test', process.env.LOG_LEVEL ?? 'silent');
const TTL_MS = 1500;
const HEARTBEAT_MS = 250;

let database: { url: string; drop: () => Promise<void> };
let admin: pg.Client;
const groups: LeaseGroup[] = [];

beforeAll(async () => {
  database = await cloneServiceDatabase('oms');
  admin = await connect(database.url);
});
afterEach(async () => {
  await Promise.all(groups.splice(0).map((group) => group.stop()));
});
afterAll(async () => {
  await admin?.end();
  await database?.drop();
});

/** A member of `group` over `names`; `works` records what it runs (the lease's name and epoch, and whether stopped). */
function member(group: string, names: string[], works: { name: string; epoch: number; stopped: boolean }[] = []): LeaseGroup {
  const lease = new LeaseGroup({
    databaseUrl: database.url,
    group,
    names,
    logger,
    ttlMs: TTL_MS,
    heartbeatMs: HEARTBEAT_MS,
    take: (held) => {
      const work = { name: held.name, epoch: held.epoch, stopped: false };
      works.push(work);
      return { stop: async () => void (work.stopped = true) };
    },
  });
  groups.push(lease);
  return lease;
}

/** A pg client as the fence takes it (TypeORM's `query` answers rows). */
const rowsOf = (client: pg.Client): Queryable => ({ query: async (sql, parameters) => (await client.query(sql, parameters)).rows });

describe('leases', { timeout: 60000 }, () => {
  it('gives each lease to exactly one live member, shares them when members join, and hands a leaving member\'s over at once', async () => {
    const names = Array.from({ length: 32 }, (_, i) => `share:${i}`);
    const a = member('share', names);
    await a.start();
    expect(a.holding().sort()).toEqual([...names].sort());
    const b = member('share', names);
    const c = member('share', names);
    await Promise.all([b.start(), c.start()]);
    const members = [a, b, c];
    // Within a few heartbeats: every lease held by the member rendezvous hashing gives it to.
    const expected = members.map((m) => names.filter((name) => assignee(name, members.map((other) => other.member)) === m.member).sort());
    await eventually(() => members.map((m) => m.holding().sort()), (lists) => JSON.stringify(lists) === JSON.stringify(expected), 'the leases shared by three members', 10000);
    expect(expected.every((list) => list.length > 0)).toBe(true);
    const { rows } = await admin.query<{ owners: string }>("SELECT count(DISTINCT owner) AS owners FROM leases WHERE lease_group = 'share' AND expires_at > now()");
    expect(Number(rows[0]!.owners)).toBe(3);
    // A member that leaves hands its leases over at once (no ttl to wait).
    const leaving = b.holding();
    const left = Date.now();
    await b.stop();
    groups.splice(groups.indexOf(b), 1);
    await eventually(() => [...a.holding(), ...c.holding()].sort(), (list) => list.length === names.length, 'the leaving member\'s leases taken', 10000);
    expect(Date.now() - left).toBeLessThan(TTL_MS + 4 * HEARTBEAT_MS);
    expect(leaving.every((name) => a.holding().includes(name) || c.holding().includes(name))).toBe(true);
  });

  it('fences a former holder: a takeover waits for its transaction in progress, and its next transaction throws LeaseLost', async () => {
    const aWorks: { name: string; epoch: number; stopped: boolean }[] = [];
    const bWorks: { name: string; epoch: number; stopped: boolean }[] = [];
    const a = member('fence', ['fence:0'], aWorks);
    await a.start();
    const lease = a.lease('fence:0') as Lease;
    expect(lease.epoch).toBe(1);
    const b = member('fence', ['fence:0'], bWorks);
    await b.start();

    // A transaction of the holder in progress, checked: it keeps the lease row locked FOR KEY SHARE.
    const client = await connect(database.url);
    try {
      await client.query('BEGIN');
      await lease.check(rowsOf(client));
      // The holder goes (as after a long pause, its lease given up): the other member may take it, but
      // not while that transaction runs.
      await a.stop();
      groups.splice(groups.indexOf(a), 1);
      await new Promise((resolve) => setTimeout(resolve, 4 * HEARTBEAT_MS));
      expect(b.holding()).toEqual([]);
      await client.query('COMMIT');
    } finally {
      await client.end();
    }
    await eventually(() => b.holding(), (list) => list.length === 1, 'the takeover after the commit', 10000);
    expect(bWorks.map(({ name, epoch }) => ({ name, epoch }))).toEqual([{ name: 'fence:0', epoch: 2 }]);
    expect(aWorks.map(({ stopped }) => stopped)).toEqual([true]);

    // The former holder's next transaction: the fence refuses it, nothing commits.
    const late = await connect(database.url);
    try {
      await late.query('BEGIN');
      await expect(lease.check(rowsOf(late))).rejects.toBeInstanceOf(LeaseLost);
      await late.query('ROLLBACK');
    } finally {
      await late.end();
    }
    await (b.lease('fence:0') as Lease).check(rowsOf(admin));
  });

  it('stops the work when PostgreSQL is away for longer than the ttl, and takes the lease again (a new epoch) once it is back', async () => {
    const works: { name: string; epoch: number; stopped: boolean }[] = [];
    const a = member('outage', ['outage:0'], works);
    await a.start();
    expect(works).toEqual([{ name: 'outage:0', epoch: 1, stopped: false }]);
    const name = (await admin.query<{ db: string }>('SELECT current_database() AS db')).rows[0]!.db;
    // PostgreSQL away for this database: no new connection, the lease's connection ended (as in a restart).
    const outside = await connect(database.url.replace(/\/[^/?]+(\?|$)/, '/postgres$1'));
    try {
      await outside.query(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS false`);
      await outside.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'leases'", [name]);
      await eventually(() => works[0]!.stopped, (stopped) => stopped, 'the work stopped once the lease lapsed', 10000);
      expect(a.holding()).toEqual([]);
    } finally {
      await outside.query(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS true`);
      await outside.end();
    }
    await eventually(() => works.length, (count) => count === 2, 'the lease taken again', 15000);
    expect(works[1]).toEqual({ name: 'outage:0', epoch: 2, stopped: false });
    expect(a.holding()).toEqual(['outage:0']);
  });

  it('computes a shipment\'s partition of the readings stream the same in JavaScript (publisher, consumer) and in SQL (the timers)', async () => {
    const ids = Array.from({ length: 500 }, () => randomUUID());
    const { rows } = await admin.query<{ id: string; partition: string }>(`SELECT id, ${partitionSql('id', '32')} AS partition FROM unnest($1::uuid[]) AS id`, [ids]);
    expect(rows.map((row) => Number(row.partition))).toEqual(ids.map((id) => readingsPartitionOf(id, 32)));
    expect(readingsPartitionOf(ids[0]!.toUpperCase(), 32)).toBe(readingsPartitionOf(ids[0]!, 32));
    // Spread over every partition.
    expect(new Set(rows.map((row) => row.partition)).size).toBe(32);
  });
});
