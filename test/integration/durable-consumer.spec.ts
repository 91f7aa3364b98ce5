import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetStreamName } from '@tracking/contracts';
import { createLogger } from '@tracking/core';
import { DurableConsumer, ensureStream, type StreamSettings } from '@tracking/outbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
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

function consumer(handle: (batch: string[]) => Promise<void>, concurrentBatches?: number): DurableConsumer<string> {
  return new DurableConsumer<string>({
    concurrentBatches,
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

  it('keeps one batch at a time by default, and runs up to concurrentBatches side by side when asked', async () => {
    for (const [concurrent, expected] of [
      [undefined, 1],
      [3, 3],
    ] as const) {
      const tag = `c${concurrent ?? 1}-`;
      let running = 0;
      let most = 0;
      const seen: string[] = [];
      let started: () => void = () => undefined;
      const consuming = new Promise<void>((resolve) => (started = resolve));
      let done: () => void = () => undefined;
      const all = new Promise<void>((resolve) => (done = resolve));
      const subject = consumer(async (batch) => {
        if (batch.includes(`${tag}start`)) started();
        const mine = batch.filter((body) => body.startsWith(tag) && body !== `${tag}start`);
        if (mine.length === 0) return;
        running++;
        most = Math.max(most, running);
        // Long enough for the next messages to arrive and form batches of their own meanwhile.
        await new Promise((resolve) => setTimeout(resolve, 150));
        running--;
        seen.push(...mine);
        if (seen.length >= 6) done();
      }, concurrent);
      subject.start();
      // Once it consumes (the subscription is set up), one message every 20 ms.
      await publish(`${tag}start`);
      await consuming;
      for (let i = 0; i < 6; i++) {
        await publish(`${tag}${i}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await all;
      await subject.stop();
      expect(most).toBe(expected);
      expect([...seen].sort()).toEqual(Array.from({ length: 6 }, (_, i) => `${tag}${i}`));
    }
  });

  // Messages taken from the subscription wait in the consumer's own queue while the handler is busy; the
  // ack wait runs for them all the same. A message that waits there longer than the ack wait must not be
  // handed out again by JetStream (to this replica or another) while it is still waiting here.
  it('hands each message to its handler once when messages wait longer than the ack wait for their turn', async () => {
    const durable = jetStreamName(prefix, `durable-${++durables}`);
    const bodies = Array.from({ length: 6 }, (_, i) => `slow-${i}`);
    const seen: string[] = [];
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolve) => (done = resolve));
    const subject = new DurableConsumer<string>({
      nats,
      stream,
      durable,
      decode: (data) => new TextDecoder().decode(data),
      handle: async (batch) => {
        const mine = batch.filter((body) => body.startsWith('slow-'));
        if (mine.length === 0) return;
        // One message at a time, each taking half the ack wait: the last ones wait 2.5 ack waits for their turn.
        await new Promise((resolve) => setTimeout(resolve, 500));
        seen.push(...mine);
        if (new Set(seen).size >= bodies.length) done();
      },
      logger,
      maxBatch: 1,
      ackWaitMs: 1000,
    });
    await publish(...bodies);
    subject.start();
    await all;
    // Long enough for a redelivery of the last message (one ack wait) to show.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await subject.stop();
    expect(seen).toEqual(bodies);
  });

  it('ordered: hands a failed batch again before any later message', async () => {
    const durable = jetStreamName(prefix, `durable-${++durables}`);
    await publish('o-a', 'o-b', 'o-c');
    const stored: string[] = [];
    let failed = false;
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolve) => (done = resolve));
    const subject = new DurableConsumer<string>({
      nats,
      stream,
      durable,
      decode: (data) => new TextDecoder().decode(data),
      handle: async (batch) => {
        if (batch.includes('o-a') && !failed) {
          failed = true;
          throw new Error('the database is away');
        }
        stored.push(...batch.filter((body) => body.startsWith('o-')));
        if (stored.length >= 3) done();
      },
      logger,
      maxBatch: 1,
      retryDelayMs: 50,
      ordered: true,
    });
    subject.start();
    await all;
    await subject.stop();
    expect(failed).toBe(true);
    expect(stored.slice(0, 3)).toEqual(['o-a', 'o-b', 'o-c']);
  });

  it('ordered: a consumer that takes over starts from the first message its predecessor did not acknowledge', async () => {
    const durable = jetStreamName(prefix, `durable-${++durables}`);
    const decode = (data: Uint8Array) => new TextDecoder().decode(data);
    // The predecessor takes h-a and h-b and never finishes them; its process dies (its connection closes).
    const dying = await connectTestNats();
    const predecessor = new DurableConsumer<string>({
      nats: dying,
      stream,
      durable,
      decode,
      handle: () => new Promise(() => undefined),
      logger,
      ordered: true,
    });
    predecessor.start();
    await publish('h-a', 'h-b');
    const jsm = await jetstreamManager(nats);
    await eventually(() => jsm.consumers.info(stream.name, durable).catch(() => undefined), (info) => info?.num_pending === 0 && info.num_ack_pending > 0, 'every message delivered to the predecessor');
    await dying.close();
    await publish('h-c');

    const stored: string[] = [];
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolve) => (done = resolve));
    const successor = new DurableConsumer<string>({
      nats,
      stream,
      durable,
      decode,
      handle: async (batch) => {
        stored.push(...batch.filter((body) => body.startsWith('h-')));
        if (stored.length >= 3) done();
      },
      logger,
      ordered: true,
    });
    successor.start();
    // Well within the 30 s ack wait after which JetStream would hand h-a and h-b out again.
    const deadline = new Promise<void>((_, reject) => setTimeout(() => reject(new Error(`only ${JSON.stringify(stored)} within 5 s`)), 5000));
    await Promise.race([all, deadline]);
    await successor.stop();
    expect(stored.slice(0, 3)).toEqual(['h-a', 'h-b', 'h-c']);
  });
});
