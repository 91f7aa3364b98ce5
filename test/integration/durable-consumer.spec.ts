import { randomBytes } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetStreamName } from '@tracking/contracts';
import { createLogger } from '@tracking/core';
import { DurableConsumer, ensureStream, type StreamSettings } from '@tracking/outbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectTestNats, deleteStreams } from '../support/jetstream.js';

/**
 * The JetStream consumer the feed, the webhook dispatch and the evaluation share, on the local NATS server
 * under a prefix of its own. Stopping must be prompt in every state, since a replica's shutdown waits for it.
 */
const prefix = `test.consumer_${randomBytes(4).toString('hex')}.`;
const logger = createLogger('test', process.env.LOG_LEVEL ?? 'silent');
const stream: StreamSettings = {
  name: jetStreamName(prefix, 'EVENTS'),
  subjects: [`${prefix}events.>`],
  maxAgeMs: 3600_000,
  duplicateWindowMs: 60_000,
  replicas: 1,
};
let nats: NatsConnection;
let durables = 0;

beforeAll(async () => {
  nats = await connectTestNats();
  await ensureStream(nats, stream);
});
afterAll(async () => {
  await nats?.close();
  await deleteStreams(prefix);
});

function consumer(handle: (batch: string[]) => Promise<void>): DurableConsumer<string> {
  return new DurableConsumer<string>({
    nats,
    stream,
    durable: jetStreamName(prefix, `durable-${++durables}`),
    decode: (data) => new TextDecoder().decode(data),
    handle,
    logger,
    retryDelayMs: 50,
  });
}

async function publish(...bodies: string[]): Promise<void> {
  const js = jetstream(nats);
  for (const body of bodies) await js.publish(`${prefix}events.test`, body);
}

describe('a durable consumer', () => {
  it('hands every message to its handler, in stream order', async () => {
    await publish('a', 'b', 'c');
    const seen: string[] = [];
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolve) => (done = resolve));
    const subject = consumer(async (batch) => {
      seen.push(...batch);
      if (seen.length >= 3) done();
    });
    subject.start();
    await all;
    await subject.stop();
    expect(seen.slice(0, 3)).toEqual(['a', 'b', 'c']);
  });

  // A replica stopped just after it started: stop came while the subscription was being set up.
  it('stops at once when stopped while it subscribes', async () => {
    for (let i = 0; i < 5; i++) {
      const subject = consumer(async () => undefined);
      subject.start();
      await subject.stop();
    }
  });

  it('stops at once when stopped while it waits for messages', async () => {
    await publish('wake');
    let woken: () => void = () => undefined;
    const reading = new Promise<void>((resolve) => (woken = resolve));
    const subject = consumer(async () => woken());
    subject.start();
    await reading;
    await subject.stop();
  });

  it('hands a failed batch to its handler again', async () => {
    await publish('retry-me');
    let calls = 0;
    let done: () => void = () => undefined;
    const twice = new Promise<void>((resolve) => (done = resolve));
    const subject = consumer(async (batch) => {
      if (!batch.includes('retry-me')) return;
      if (++calls === 1) throw new Error('the database is away');
      done();
    });
    subject.start();
    await twice;
    await subject.stop();
    expect(calls).toBe(2);
  });
});
