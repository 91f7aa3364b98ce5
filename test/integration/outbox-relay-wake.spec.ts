import { randomBytes, randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetStreamName } from '@tracking/contracts';
import { createLogger } from '@tracking/core';
import { createServiceDataSource } from '@tracking/database';
import { ensureStream, OutboxRelay, type OutboxRelayOptions, type StreamSettings } from '@tracking/outbox';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { connectTestNats, deleteStreams } from '../support/jetstream.js';
import { cloneServiceDatabase } from '../support/medium.js';

/**
 * The outbox relay's wake-ups, on the local NATS server under a prefix of its own and a clone of the OMS
 * database. The relay polls only once an hour here, so every publication below is the work of a wake-up
 * (a commit's notification, or `poke`): a lost one would leave its message in the outbox for the hour.
 */
const logger = createLogger('test', process.env.LOG_LEVEL ?? 'silent');
const HOUR_MS = 3600_000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(options: Partial<OutboxRelayOptions> = {}): Promise<{ relay: OutboxRelay; db: pg.Client; nats: NatsConnection; stream: StreamSettings }> {
  const prefix = `test.relaywake_${randomBytes(4).toString('hex')}.`;
  const stream: StreamSettings = { name: jetStreamName(prefix, 'EVENTS'), subjects: [`${prefix}events.>`], maxAgeMs: 3600_000, duplicateWindowMs: 60_000, replicas: 1 };
  const nats = await connectTestNats();
  cleanups.push(async () => {
    await nats.close();
    await deleteStreams(prefix);
  });
  await ensureStream(nats, stream);
  const { url, drop } = await cloneServiceDatabase('oms');
  cleanups.push(drop);
  const dataSource = createServiceDataSource({ url, poolSize: 2, entities: [], migrations: [], applicationName: 'relay-wake-test' });
  await dataSource.initialize();
  cleanups.push(() => dataSource.destroy());
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  cleanups.push(() => db.end());
  const relay = new OutboxRelay({ dataSource, databaseUrl: url, nats, subjectPrefix: prefix, logger, pollIntervalMs: HOUR_MS, ...options });
  return { relay, db, nats, stream };
}

async function write(db: pg.Client, count = 1): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID());
  await db.query(
    `INSERT INTO outbox (msg_id, subject, payload) SELECT id, 'events.test', json_build_object('id', id)::text FROM unnest($1::uuid[]) WITH ORDINALITY AS t(id, n) ORDER BY n`,
    [ids],
  );
  return ids;
}

const backlog = async (db: pg.Client) => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox')).rows[0]!.n;

describe('the outbox relay wakes up for every commit', { timeout: 60000 }, () => {
  it('publishes a message committed while a batch runs, after that batch read the outbox', async () => {
    let batches = 0;
    let late: string[] = [];
    // The second message commits (and notifies) after the first batch read the outbox and before it ends:
    // that batch cannot see it, so only the wake-up it sent gets it out.
    const setup = await setUp({
      afterPublish: async (count) => {
        if (count > 0 && ++batches === 1) late = await write(setup.db);
      },
    });
    const { relay, db, nats, stream } = setup;
    await relay.start();
    cleanups.push(() => relay.stop());
    const [first] = await write(db);
    await eventually(() => backlog(db), (n) => n === 0 && late.length === 1, 'both messages published');
    expect(batches).toBe(2);
    const jsm = await jetstreamManager(nats);
    const info = await jsm.streams.info(stream.name);
    expect(info.state.messages).toBe(2);
    const ids = await Promise.all([1, 2].map(async (seq) => ((await jsm.streams.getMessage(stream.name, { seq }))?.json() as { id: string }).id));
    expect(ids).toEqual([first, late[0]]);
  });

  it('keeps a poke that comes while a batch runs for the wait after it', async () => {
    let batches = 0;
    let quiet: string[] = [];
    const setup = await setUp({
      afterPublish: async (count) => {
        if (count === 0 || ++batches > 1) return;
        // Committed with the outbox's notification trigger silenced for this session (a notification lost
        // on the way): the poke alone stands for it.
        await setup.db.query('SET session_replication_role = replica');
        quiet = await write(setup.db);
        await setup.db.query('SET session_replication_role = DEFAULT');
        setup.relay.poke();
      },
    });
    const { relay, db } = setup;
    await relay.start();
    cleanups.push(() => relay.stop());
    await write(db);
    await eventually(() => backlog(db), (n) => n === 0 && quiet.length === 1, 'both messages published');
    expect(batches).toBe(2);
  });

  it('stops at once while it waits for its next poll', async () => {
    const { relay, db } = await setUp();
    await relay.start();
    await write(db);
    await eventually(() => backlog(db), (n) => n === 0, 'the message published');
    // Waiting for the hourly poll now: stop must not wait for it (the test's timeout would end it first).
    await relay.stop();
  });
});
