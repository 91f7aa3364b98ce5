import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '@tracking/core';
import pg from 'pg';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { DataSource, EntityManager } from 'typeorm';

export interface OutboxRelayOptions {
  /** The service's database (the relay's batches run in its pool). */
  dataSource: DataSource;
  /** The same database, for the one connection that listens for `outbox` notifications. */
  databaseUrl: string;
  nats: NatsConnection;
  /** The deployment's NATS_SUBJECT_PREFIX, put before every stored subject. */
  subjectPrefix: string;
  logger: Logger;
  /** Where the relay's metrics go (the service's registry). */
  registry?: Registry;
  /** Messages per batch (one transaction, published together). */
  batchSize?: number;
  /** How often the relay looks without being woken: the bound on a lost notification. */
  pollIntervalMs?: number;
  /**
   * How long JetStream has to acknowledge one message while NATS stays connected. Publications pending
   * when the connection is lost do not wait for it: they are given up when NATS is back (see the class).
   */
  publishTimeoutMs?: number;
  /**
   * Called after a batch was published and before it is marked sent: a fault-injection point for the
   * tests of a relay that dies there (nothing else sets it).
   */
  afterPublish?: (count: number) => Promise<void> | void;
}

/** The advisory lock that makes one relay of a database publish at a time. */
const RELAY_LOCK = 'outbox-relay';

/**
 * Publishes a database's outbox on JetStream, oldest first, and deletes what JetStream acknowledged.
 *
 * - One relay at a time per database: every batch runs in a transaction that first takes a
 *   transaction-scoped advisory lock (`pg_try_advisory_xact_lock`); the other replicas' relays skip
 *   their turn. So replicas never publish out of turn, and a relay that dies releases the lock with its
 *   connection.
 * - The rows of a batch are deleted in the transaction that published them. A relay killed after
 *   publishing and before that commit leaves the rows; the next batch publishes them again with the same
 *   Nats-Msg-Id, which JetStream drops as duplicates within the stream's duplicate window, and the
 *   consumers drop by event id after that. Nothing is lost; nothing reaches a consumer's store twice.
 * - A statement trigger notifies `outbox` at commit; the relay listens, so an event is published within
 *   milliseconds of its commit, and looks anyway every `pollIntervalMs` in case a notification was lost.
 * - While NATS is disconnected the relay starts no batch (a publication would only wait in the client's
 *   buffer for `publishTimeoutMs`); it waits for the reconnection. A batch whose publications were pending
 *   when the connection dropped gives them up as soon as NATS is back, keeps their rows and runs again
 *   at once (the same message ids, so JetStream drops any that did reach it): before, the relay waited
 *   for their acknowledgements to time out, some 5 s after NATS was back.
 */
export class OutboxRelay {
  private readonly js: JetStreamClient;
  private readonly batchSize: number;
  private readonly pollIntervalMs: number;
  private readonly publishTimeoutMs: number;
  private listener: pg.Client | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  /**
   * The doorbell: aborted by a notification (`poke`) or by `stop`, and replaced as each batch begins, so
   * a wake that comes while the batch runs ends the wait after it at once and none is lost. Node's own
   * primitives (an AbortController and `timers/promises`) in place of a flag and a stored callback.
   */
  private doorbell = new AbortController();
  /** Aborted by `stop`: ends a backoff, which a notification does not cut short. */
  private readonly stopping = new AbortController();
  private readonly relayed: Counter | undefined;
  private readonly failures: Counter | undefined;
  /** Follows the NATS connection's status: false from a disconnection to the reconnection. */
  private natsConnected = true;
  /** Gives up the publications of the batch in progress (on reconnection). */
  private abandon: ((reason: Error) => void) | undefined;

  constructor(private readonly options: OutboxRelayOptions) {
    this.js = jetstream(options.nats);
    this.batchSize = options.batchSize ?? 500;
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.publishTimeoutMs = options.publishTimeoutMs ?? 5000;
    const registers = options.registry ? [options.registry] : [];
    if (options.registry) {
      this.relayed = new Counter({ name: 'outbox_relayed_total', help: 'Outbox messages published on JetStream and acknowledged.', registers });
      this.failures = new Counter({ name: 'outbox_publish_failures_total', help: 'Outbox messages JetStream did not acknowledge (retried).', registers });
      const dataSource = options.dataSource;
      new Gauge({
        name: 'outbox_backlog',
        help: 'Outbox messages committed and not yet published.',
        registers,
        async collect() {
          const [row] = (await dataSource.query('SELECT count(*)::int AS n FROM outbox')) as { n: number }[];
          this.set(row?.n ?? 0);
        },
      });
      new Gauge({
        name: 'outbox_oldest_age_seconds',
        help: 'Age of the oldest outbox message not yet published (0 when none).',
        registers,
        async collect() {
          const [row] = (await dataSource.query(
            'SELECT coalesce(extract(epoch FROM now() - (SELECT created_at FROM outbox ORDER BY seq LIMIT 1)), 0)::float8 AS age',
          )) as { age: number }[];
          this.set(row?.age ?? 0);
        },
      });
    }
  }

  /** Starts listening and relaying; resolves once the listener is connected. */
  async start(): Promise<void> {
    void this.followNats();
    await this.listen();
    this.running = this.run();
  }

  private async followNats(): Promise<void> {
    for await (const status of this.options.nats.status()) {
      if (status.type === 'disconnect') this.natsConnected = false;
      else if (status.type === 'reconnect') {
        this.natsConnected = true;
        this.abandon?.(new Error('NATS reconnected; publications pending since the disconnection are given up and sent again'));
        this.poke();
      }
    }
  }

  /** Stops after the batch in progress (whose transaction commits or rolls back as it would). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    this.doorbell.abort();
    await this.running;
    await this.listener?.end().catch(() => undefined);
  }

  /** Makes the relay look now (it also wakes on the database's notification). */
  poke(): void {
    this.doorbell.abort();
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.options.databaseUrl, application_name: 'outbox-relay' });
    client.on('notification', () => this.poke());
    const lost = (error?: Error) => {
      // The poll goes on meanwhile; a new listener is tried at the next pass (`ensureListener`).
      if (this.listener !== client) return;
      this.listener = undefined;
      if (!this.stopped) this.options.logger.warn({ err: error }, 'outbox listener connection lost; polling until it is back');
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.connect();
    await client.query('LISTEN outbox');
    this.listener = client;
  }

  private async ensureListener(): Promise<void> {
    if (this.listener || this.stopped) return;
    await this.listen().catch(() => undefined);
  }

  private async run(): Promise<void> {
    let backoffMs = 0;
    while (!this.stopped) {
      let full = false;
      // A wake from now on means something may have committed after this batch's read: it rings this
      // doorbell (a new one, in the same turn as the check above, so a `stop` cannot fall between).
      const doorbell = (this.doorbell = new AbortController());
      try {
        await this.ensureListener();
        const outcome = await this.relayBatch();
        full = (outcome.read === this.batchSize && outcome.failed === 0) || outcome.abandoned;
        backoffMs = outcome.failed > 0 && !outcome.abandoned ? Math.min(Math.max(backoffMs * 2, 100), this.pollIntervalMs) : 0;
      } catch (error) {
        backoffMs = Math.min(Math.max(backoffMs * 2, 100), this.pollIntervalMs);
        this.options.logger.warn({ err: error }, 'outbox relay batch failed; retrying');
      }
      if (this.stopped) break;
      // A rung doorbell makes `sleep` reject at once (AbortError), which ends the wait as intended.
      if (backoffMs > 0) await sleep(backoffMs, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      else if (!full) await sleep(this.pollIntervalMs, undefined, { signal: doorbell.signal }).catch(() => undefined);
    }
  }

  /**
   * One batch under the relay lock; `read` messages read, `failed` of them not acknowledged (kept),
   * `abandoned` when NATS reconnected meanwhile (the batch is to run again at once).
   */
  private relayBatch(): Promise<{ read: number; failed: number; abandoned: boolean }> {
    // Disconnected: nothing would be acknowledged; the reconnection wakes the relay.
    if (!this.natsConnected) return Promise.resolve({ read: 0, failed: 0, abandoned: false });
    return this.options.dataSource.transaction(async (manager: EntityManager) => {
      const [lock] = (await manager.query('SELECT pg_try_advisory_xact_lock(hashtext($1)) AS locked', [RELAY_LOCK])) as { locked: boolean }[];
      if (!lock?.locked) return { read: 0, failed: 0, abandoned: false };
      const rows = (await manager.query('SELECT seq, msg_id, subject, payload FROM outbox ORDER BY seq LIMIT $1', [this.batchSize])) as {
        seq: string;
        msg_id: string;
        subject: string;
        payload: string;
      }[];
      if (rows.length === 0) return { read: 0, failed: 0, abandoned: false };
      let abandoned = false;
      const reconnected = new Promise<never>((_, reject) => {
        this.abandon = (reason) => {
          abandoned = true;
          reject(reason);
        };
      });
      reconnected.catch(() => undefined);
      // Sent in order on one connection; JetStream stores them in that order. Acknowledgements come back together.
      const acks = await Promise.allSettled(
        rows.map((row) =>
          Promise.race([
            this.js.publish(this.options.subjectPrefix + row.subject, row.payload, { msgID: row.msg_id, timeout: this.publishTimeoutMs }),
            reconnected,
          ]),
        ),
      );
      this.abandon = undefined;
      const sent = rows.filter((_, index) => acks[index]?.status === 'fulfilled').map((row) => row.seq);
      const failed = rows.length - sent.length;
      if (failed > 0) {
        const reason = acks.find((ack) => ack.status === 'rejected') as PromiseRejectedResult;
        this.failures?.inc(failed);
        this.options.logger.warn({ err: reason.reason, failed }, 'JetStream did not acknowledge outbox messages; they stay for the next batch');
      }
      await this.options.afterPublish?.(sent.length);
      if (sent.length > 0) await manager.query('DELETE FROM outbox WHERE seq = ANY($1::bigint[])', [sent]);
      this.relayed?.inc(sent.length);
      return { read: rows.length, failed, abandoned };
    });
  }
}
