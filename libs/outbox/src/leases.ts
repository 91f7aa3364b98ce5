import { createHash, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '@tracking/core';
import pg from 'pg';

/** What a lease's fencing check runs its statement on: the caller's transaction (a TypeORM EntityManager). */
export interface Queryable {
  query(sql: string, parameters?: unknown[]): Promise<unknown>;
}

/** The lease was taken over (or lapsed): the transaction that checked it must not commit. */
export class LeaseLost extends Error {
  constructor(readonly lease: string) {
    super(`lease ${lease} is no longer held by this process`);
  }
}

/** A lease this process holds, at one epoch (each new holder moves the epoch on). */
export interface Lease {
  readonly name: string;
  readonly epoch: number;
  /**
   * The fence: in the caller's transaction, before it writes, checks that this process still holds the
   * lease at this epoch and keeps the row locked `FOR KEY SHARE` until the transaction ends, so that a
   * takeover (which locks the row `FOR UPDATE`) waits for the transaction to finish, and a transaction
   * that starts after a takeover throws `LeaseLost` (the lease is then let go of here at once).
   */
  check(manager: Queryable): Promise<void>;
}

/** The work a lease holder runs; `stop` returns once nothing of it can write any more. */
export interface LeaseWork {
  stop(): Promise<void>;
}

export interface LeaseGroupOptions {
  databaseUrl: string;
  /** The group's name: every process that may run the same work uses the same one. */
  group: string;
  /** The group's leases (fixed for a deployment): each is held by at most one live member. */
  names: readonly string[];
  logger: Logger;
  /** A lease or a membership not renewed for this long lapses (another member may take it). */
  ttlMs?: number;
  /** How often a member renews what it holds and looks at who is alive. */
  heartbeatMs?: number;
  /** Starts the work of a lease this process now holds. */
  take: (lease: Lease) => LeaseWork | Promise<LeaseWork>;
}

interface Held {
  lease: Lease;
  work: Promise<LeaseWork | undefined>;
  /** Until when this process may consider the lease its own (the last renewal sent, plus the ttl). */
  validUntil: number;
}

/**
 * "One runner at a time", for a fixed set of leases shared by a group of processes (docs/leases.md):
 * rows in PostgreSQL (`leases`, `lease_members`) with an epoch per lease for fencing.
 *
 * Each member renews its membership and its leases every `heartbeatMs` (on the process's lease pool, apart
 * from the service's, so that a busy pool never delays a renewal), reads the live members (renewed within `ttlMs`) and gives
 * each lease to one of them by rendezvous hashing (the member with the highest hash of member and lease
 * name), the same answer on every member that sees the same members. It lets go of the leases assigned
 * elsewhere (its work stopped first) and takes the ones assigned to it once they are free or lapsed. A
 * member that dies stops renewing: its leases lapse after `ttlMs` and are taken by the others. A member
 * that cannot renew in time (PostgreSQL away, a pause) stops its work when its last renewal's ttl has
 * passed, and takes its leases again, at a new epoch, once PostgreSQL answers. Writes that must not come
 * from a former holder call `lease.check(manager)` in their transaction (the fence).
 *
 * Hand-written rather than a library: the work's writes must be fenced in the work's own PostgreSQL
 * transactions, which a lock service outside that database (Redis, NATS KV) cannot give.
 */
export class LeaseGroup {
  readonly member = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly pool: pg.Pool;
  private readonly held = new Map<string, Held>();
  private readonly ttlMs: number;
  private readonly heartbeatMs: number;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;
  private failing = false;
  private beats = 0;
  /** Works being stopped (a lease let go of or lost); `stop` waits for them. */
  private readonly stopping = new Set<Promise<void>>();
  /** The leases whose work is being stopped here: not taken again until it has. */
  private readonly stoppingNames = new Set<string>();

  constructor(private readonly options: LeaseGroupOptions) {
    this.ttlMs = options.ttlMs ?? 5000;
    this.heartbeatMs = options.heartbeatMs ?? 1000;
    this.pool = sharedPool(options.databaseUrl, this.ttlMs);
  }

  /** Joins the group; resolves after the first heartbeat (a lone member then holds every lease that was free). */
  async start(): Promise<void> {
    await this.tick();
  }

  /** The names of the leases this process holds now. */
  holding(): string[] {
    return [...this.held.keys()];
  }

  lease(name: string): Lease | undefined {
    return this.held.get(name)?.lease;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), this.heartbeatMs);
  }

  private tick(): Promise<void> {
    this.ticking ??= this.heartbeat().finally(() => {
      this.ticking = undefined;
      this.schedule();
    });
    return this.ticking;
  }

  private async heartbeat(): Promise<void> {
    const { group, names } = this.options;
    const sent = Date.now();
    try {
      const ttl = this.ttlMs / 1000;
      await this.pool.query(
        `INSERT INTO lease_members (lease_group, member, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
           ON CONFLICT (lease_group, member) DO UPDATE SET expires_at = EXCLUDED.expires_at`,
        [group, this.member, ttl],
      );
      if (this.held.size > 0) {
        const { rows } = await this.pool.query<{ name: string; epoch: string }>(
          `UPDATE leases SET expires_at = now() + make_interval(secs => $3) WHERE owner = $1 AND name = ANY($2::text[]) RETURNING name, epoch`,
          [this.member, [...this.held.keys()], ttl],
        );
        const renewed = new Map(rows.map((row) => [row.name, Number(row.epoch)]));
        for (const [name, held] of this.held) {
          if (renewed.get(name) === held.lease.epoch) held.validUntil = sent + this.ttlMs;
          else this.lose(name, 'taken over');
        }
      }
      // Members that died long ago (a live one renews every heartbeat): once a minute or so.
      if (++this.beats % 60 === 1) {
        await this.pool.query(`DELETE FROM lease_members WHERE lease_group = $1 AND expires_at < now() - interval '1 hour'`, [group]);
      }
      const { rows: members } = await this.pool.query<{ member: string }>(
        'SELECT member FROM lease_members WHERE lease_group = $1 AND expires_at > now()',
        [group],
      );
      const live = members.map((row) => row.member);
      if (!live.includes(this.member)) live.push(this.member);
      const wanted: string[] = [];
      for (const name of names) {
        const mine = assignee(name, live) === this.member;
        // Not while this process still stops its former work of the lease (two at once would interleave).
        if (mine && !this.held.has(name) && !this.stoppingNames.has(name)) wanted.push(name);
        else if (!mine && this.held.has(name)) this.letGo(name);
      }
      if (wanted.length > 0 && !this.stopped) await this.acquire(wanted);
      if (this.failing) this.options.logger.info({ group, holding: this.held.size }, 'leases: PostgreSQL answers again');
      this.failing = false;
    } catch (error) {
      if (!this.failing) this.options.logger.warn({ err: error, group }, 'leases: cannot renew; the work stops when the leases lapse, and resumes once PostgreSQL answers');
      this.failing = true;
    }
    // Leases whose last renewal is older than the ttl may be another member's by now.
    const now = Date.now();
    for (const [name, held] of this.held) if (held.validUntil <= now) this.lose(name, 'not renewed in time');
  }

  /**
   * Takes those of the leases that are free, lapsed or already this member's, at a new epoch each, in one
   * transaction. A lease whose row is locked is left for the next heartbeat (`SKIP LOCKED`): above all
   * one that the former holder's fenced transactions in progress hold `FOR KEY SHARE`, so that the new
   * epoch starts only after they commit or roll back.
   */
  private async acquire(names: string[]): Promise<void> {
    const sent = Date.now();
    const client = await this.pool.connect();
    let taken: { name: string; epoch: string }[] = [];
    try {
      await client.query('BEGIN');
      await client.query('INSERT INTO leases (name, lease_group) SELECT unnest($1::text[]), $2 ORDER BY 1 ON CONFLICT (name) DO NOTHING', [names, this.options.group]);
      const { rows: free } = await client.query<{ name: string }>(
        `SELECT name FROM leases WHERE name = ANY($1::text[]) AND (owner IS NULL OR owner = $2 OR expires_at <= clock_timestamp())
          ORDER BY name FOR UPDATE SKIP LOCKED`,
        [names, this.member],
      );
      if (free.length > 0) {
        ({ rows: taken } = await client.query<{ name: string; epoch: string }>(
          `UPDATE leases SET owner = $2, epoch = epoch + 1, expires_at = now() + make_interval(secs => $3) WHERE name = ANY($1::text[]) RETURNING name, epoch`,
          [free.map((row) => row.name), this.member, this.ttlMs / 1000],
        ));
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
    for (const row of taken) this.begin(row.name, Number(row.epoch), sent + this.ttlMs);
  }

  private begin(name: string, epoch: number, validUntil: number): void {
    const lease = this.fence(name, epoch);
    const work = Promise.resolve()
      .then(() => this.options.take(lease))
      .catch((error: unknown) => {
        this.options.logger.error({ err: error, lease: name }, 'leases: the work of a lease failed to start; letting the lease go');
        this.letGo(name);
        return undefined;
      });
    this.held.set(name, { lease, work, validUntil });
    this.options.logger.info({ lease: name, epoch, member: this.member }, 'lease taken');
  }

  private fence(name: string, epoch: number): Lease {
    return leaseFence(name, this.member, epoch, () => {
      if (this.held.get(name)?.lease.epoch === epoch) this.lose(name, 'fence');
    });
  }

  /** Assigned to another member now: stops the work, then frees the lease (the other takes it at once). */
  private letGo(name: string): void {
    const held = this.held.get(name);
    if (!held) return;
    this.held.delete(name);
    this.track(
      name,
      this.stopWork(held).then(async () => {
        await this.pool.query(`UPDATE leases SET owner = NULL, expires_at = '-infinity' WHERE name = $1 AND owner = $2 AND epoch = $3`, [
          name,
          this.member,
          held.lease.epoch,
        ]);
        this.options.logger.info({ lease: name, epoch: held.lease.epoch }, 'lease handed over');
      }),
    );
  }

  /** No longer ours (taken over, or not renewed in time): the work stops at once; the row is not touched. */
  private lose(name: string, why: string): void {
    const held = this.held.get(name);
    if (!held) return;
    this.held.delete(name);
    this.options.logger.warn({ lease: name, epoch: held.lease.epoch, why }, 'lease lost; its work stops');
    this.track(name, this.stopWork(held));
  }

  private async stopWork(held: Held): Promise<void> {
    const work = await held.work;
    await work?.stop();
  }

  private track(name: string, stopping: Promise<void>): void {
    const tracked = stopping.catch((error: unknown) => this.options.logger.warn({ err: error, lease: name }, 'leases: stopping a lease\'s work failed'));
    this.stopping.add(tracked);
    this.stoppingNames.add(name);
    void tracked.finally(() => {
      this.stopping.delete(tracked);
      this.stoppingNames.delete(name);
    });
  }

  /** Leaves the group: stops every work, frees its leases and its membership (the others take over at once). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    clearTimeout(this.timer);
    for (const name of [...this.held.keys()]) this.letGo(name);
    await Promise.all([...this.stopping]);
    await this.pool
      .query('DELETE FROM lease_members WHERE lease_group = $1 AND member = $2', [this.options.group, this.member])
      .catch(() => undefined);
    await releasePool(this.options.databaseUrl);
  }
}

/**
 * The leases' connections of a process, per database: one pool of two shared by its groups (a process
 * runs up to three), so that leases cost a process two connections however many groups it joins. Their
 * statements are short (no lock waits: `SKIP LOCKED`), so groups never hold each other up for long.
 */
const pools = new Map<string, { pool: pg.Pool; users: number }>();

function sharedPool(databaseUrl: string, ttlMs: number): pg.Pool {
  let shared = pools.get(databaseUrl);
  if (!shared) {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 2, application_name: 'leases', connectionTimeoutMillis: ttlMs, query_timeout: ttlMs });
    pool.on('error', () => undefined);
    shared = { pool, users: 0 };
    pools.set(databaseUrl, shared);
  }
  shared.users++;
  return shared.pool;
}

async function releasePool(databaseUrl: string): Promise<void> {
  const shared = pools.get(databaseUrl);
  if (!shared || --shared.users > 0) return;
  pools.delete(databaseUrl);
  await shared.pool.end().catch(() => undefined);
}

/**
 * The fence of the lease `name` held by `member` at `epoch` (`Lease.check`); `onLost` is told when the
 * check finds it gone.
 */
export function leaseFence(name: string, member: string, epoch: number, onLost: () => void = () => undefined): Lease {
  return {
    name,
    epoch,
    check: async (manager) => {
      const rows = (await manager.query(
        'SELECT 1 FROM leases WHERE name = $1 AND owner = $2 AND epoch = $3 AND expires_at > clock_timestamp() FOR KEY SHARE',
        [name, member, epoch],
      )) as unknown[];
      if (rows.length === 1) return;
      onLost();
      throw new LeaseLost(name);
    },
  };
}

/** Rendezvous (highest random weight) hashing: the member a lease goes to, the same on every member. */
export function assignee(name: string, members: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const member of members) {
    const score = createHash('md5').update(`${member}\n${name}`).digest().readUInt32BE(0);
    if (score > bestScore || (score === bestScore && best !== undefined && member < best)) {
      best = member;
      bestScore = score;
    }
  }
  return best;
}
