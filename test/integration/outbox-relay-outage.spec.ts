import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createLogger } from '@tracking/core';
import { createServiceDataSource } from '@tracking/database';
import { ensureStream, OutboxRelay, type StreamSettings } from '@tracking/outbox';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { cloneServiceDatabase } from '../support/medium.js';
import { OwnNatsServer } from '../support/nats-server.js';

/**
 * The outbox relay across a NATS outage, on a nats-server of the test's own (JetStream on a store that
 * survives the restart) and a clone of the OMS database. What matters is how soon the relay publishes
 * again once NATS is back: the events that piled up in the outbox meanwhile must leave at once, not after
 * the publications buffered during the outage time out.
 */
const logger = createLogger('test', process.env.LOG_LEVEL ?? 'silent');
const PREFIX = 'relay.';
const PUBLISH_TIMEOUT_MS = 5000;
const RECONNECT_TIME_WAIT_MS = 100;
const stream: StreamSettings = { name: 'RELAY_EVENTS', subjects: [`${PREFIX}events.>`], maxAgeMs: 3600_000, duplicateWindowMs: 600_000, replicas: 1 };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(): Promise<{ nats: OwnNatsServer; connection: NatsConnection; relay: OutboxRelay; db: pg.Client; dataSource: DataSource }> {
  const store = mkdtempSync(join(tmpdir(), 'relay-js-'));
  cleanups.push(() => rmSync(store, { recursive: true, force: true }));
  const nats = await OwnNatsServer.start({ args: ['-js', '-sd', store] });
  cleanups.push(() => nats.stop());
  const connection = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: RECONNECT_TIME_WAIT_MS, name: 'relay-test' });
  cleanups.push(async () => {
    await nats.start();
    await connection.close();
  });
  await ensureStream(connection, stream);
  const { url, drop } = await cloneServiceDatabase('oms');
  cleanups.push(drop);
  const dataSource = createServiceDataSource({ url, poolSize: 2, entities: [], migrations: [], applicationName: 'relay-test' });
  await dataSource.initialize();
  cleanups.push(() => dataSource.destroy());
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  cleanups.push(() => db.end());
  const relay = new OutboxRelay({ dataSource, databaseUrl: url, nats: connection, subjectPrefix: PREFIX, logger, publishTimeoutMs: PUBLISH_TIMEOUT_MS });
  await relay.start();
  cleanups.push(() => relay.stop());
  return { nats, connection, relay, db, dataSource };
}

async function write(db: pg.Client, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID());
  await db.query(
    `INSERT INTO outbox (msg_id, subject, payload) SELECT id, 'events.test', json_build_object('id', id)::text FROM unnest($1::uuid[]) WITH ORDINALITY AS t(id, n) ORDER BY n`,
    [ids],
  );
  return ids;
}

const backlog = async (db: pg.Client) => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox')).rows[0]!.n;

describe('the outbox relay across a NATS outage', { timeout: 60000 }, () => {
  it('publishes what piled up as soon as NATS is back, not after the buffered publications time out', async () => {
    const { nats, connection, db } = await setUp();
    await write(db, 3);
    await eventually(() => backlog(db), (n) => n === 0, 'the relay publishes before the outage');

    await nats.stop();
    const during = await write(db, 20);
    // The outage lasts long enough for the relay to be waiting on publications buffered in the client.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await backlog(db)).toBe(20);

    const back = performance.now();
    await nats.start();
    await eventually(() => backlog(db), (n) => n === 0, 'the relay publishes after the outage', 15000);
    const resumeMs = performance.now() - back;
    console.log(`relay resumed ${Math.round(resumeMs)} ms after nats-server was ready again`);
    expect(resumeMs).toBeLessThan(2000);

    // Everything is on the stream once, in the order written.
    const jsm = await jetstreamManager(connection);
    const info = await jsm.streams.info(stream.name);
    expect(info.state.messages).toBe(23);
    const last = await jsm.streams.getMessage(stream.name, { seq: info.state.last_seq });
    expect((last?.json() as { id: string } | undefined)?.id).toBe(during.at(-1));
  });

  it('gives up the publications pending when the connection dropped as soon as NATS is back', async () => {
    const { nats, connection, db } = await setUp();
    const ids = await write(db, 20000);
    // Stopped while the relay publishes: a batch's publications are pending when the connection drops.
    await eventually(() => backlog(db), (n) => n < 19000, 'the relay publishes', 15000);
    await nats.stop();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const left = await backlog(db);
    expect(left).toBeGreaterThan(0);

    const back = performance.now();
    await nats.start();
    await eventually(() => backlog(db), (n) => n < left, 'the relay publishes after the outage', 15000);
    const resumeMs = performance.now() - back;
    console.log(`relay resumed ${Math.round(resumeMs)} ms after nats-server was ready again (in-flight batch)`);
    expect(resumeMs).toBeLessThan(2000);
    await eventually(() => backlog(db), (n) => n === 0, 'the relay publishes everything', 30000);
    const jsm = await jetstreamManager(connection);
    const info = await jsm.streams.info(stream.name);
    expect(info.state.messages).toBe(ids.length);
    const last = await jsm.streams.getMessage(stream.name, { seq: info.state.last_seq });
    expect((last?.json() as { id: string } | undefined)?.id).toBe(ids.at(-1));
  });
});
