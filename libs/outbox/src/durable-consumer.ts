import { AckPolicy, type ConsumerMessages, DeliverPolicy, JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '@tracking/core';
import { ensureStream, nanos, type StreamSettings } from './jetstream-setup.js';

export interface DurableConsumerOptions<T> {
  nats: NatsConnection;
  /** The stream, made sure of before the consumer (whichever process comes first creates it). */
  stream: StreamSettings;
  /** The durable name: every replica with this name shares one position in the stream. */
  durable: string;
  /** The subject (wildcards allowed) of the stream this consumer reads (all when absent); one per consumer on NATS 2.9. */
  filterSubject?: string;
  /** The message's body as the handler takes it; a throw marks the message malformed (terminated, logged). */
  decode: (data: Uint8Array, subject: string) => T;
  /**
   * Handles a batch, in stream order; a message is acknowledged only after its batch's handler resolves.
   * A handler that throws gets the whole batch again after `retryDelayMs`, so it must be idempotent
   * (which the outbox's at-least-once publication requires anyway).
   */
  handle: (batch: T[]) => Promise<void>;
  logger: Logger;
  /** The most messages handed to one handler call. */
  maxBatch?: number;
  /**
   * Handler calls in flight at once (default 1: one batch at a time). With more, a new batch starts while
   * earlier ones are still being handled (each is acknowledged when its own call resolves), for handlers
   * that mostly wait, such as a reorder delay; the handler then orders its own work.
   */
  concurrentBatches?: number;
  /**
   * How long a batch's handler may take before JetStream redelivers its messages (to any replica). A
   * message's wait in this process for its turn does not count: it is renewed (`working()`) meanwhile.
   */
  ackWaitMs?: number;
  /** The wait before a failed batch is handed out again (the first wait, in `ordered` mode, which doubles it up to 5 s). */
  retryDelayMs?: number;
  /**
   * Strict stream order, for a store that must keep it (the events feed), with one process consuming at a
   * time (the holder of a lease, `LeaseGroup`) and one batch at a time (`concurrentBatches` is ignored):
   * - a failed batch is handed to the handler again in place, after `retryDelayMs` doubling up to 5 s,
   *   until it succeeds or the consumer stops; the messages after it wait behind it (they are not handed
   *   out before it, as a negative acknowledgement with a delay would let them be);
   * - each subscription starts at the consumer's acknowledgement floor: when messages were delivered and
   *   not acknowledged (taken by a process that died or lost the lead), the durable consumer is made again
   *   from the first unacknowledged message, so those come first again rather than after the ack wait,
   *   behind newer ones. The handler must skip what it already handled (the feed skips an event by id).
   */
  ordered?: boolean;
}

/** A message taken from the subscription, waiting for the handler. */
interface Held {
  message: JsMsg;
  /** When its ack wait last began (its delivery, or the last `working()` sent for it). */
  since: number;
}

/** The longest wait between two tries of a failed batch in `ordered` mode. */
const ORDERED_RETRY_MAX_MS = 5000;

/**
 * A durable pull consumer that hands messages to its handler in batches as they come: one message when
 * traffic is light (no waiting to fill a batch), up to `maxBatch` under load, `concurrentBatches` at a
 * time per process. Replicas sharing the durable name share the work; a replica that dies leaves its
 * unacknowledged messages to the others after `ackWaitMs`. A message waiting in this process for the
 * handler keeps its ack wait from running out (`working()`), and a batch's handler gets a whole ack wait.
 */
export class DurableConsumer<T> {
  private messages: ConsumerMessages | undefined;
  /** Messages taken from the subscription and not yet handed to the handler, each with when its ack wait last began. */
  private readonly queue: Held[] = [];
  /** Handler calls in progress (at most `concurrentBatches`, 1 in `ordered` mode). */
  private readonly inFlight = new Set<Promise<void>>();
  private readonly concurrent: number;
  private readonly ackWaitMs: number;
  /** A `dispatch` is due at the end of this turn. */
  private dispatchDue = false;
  /** Tells JetStream, every quarter of the ack wait, that the queued messages are still being worked on. */
  private keepAlive: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private retryDone: (() => void) | undefined;
  /** Ends the wait before an ordered batch's next try (on stop). */
  private retryWake: (() => void) | undefined;

  constructor(private readonly options: DurableConsumerOptions<T>) {
    this.concurrent = options.ordered ? 1 : (options.concurrentBatches ?? 1);
    this.ackWaitMs = options.ackWaitMs ?? 30000;
  }

  /**
   * Starts consuming; never fails: while the stream or NATS is unavailable (JetStream down, permissions
   * missing) it logs and tries again every few seconds, and it starts again when its subscription ends.
   */
  start(): void {
    this.keepAlive = setInterval(() => this.touchQueued(), this.ackWaitMs / 4).unref();
    this.reading = this.run();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const messages = await this.subscribe();
        // Stopped while subscribing: `stop` found no subscription to close, so close this one here. nats.js
        // finishes a close through the iterator (its promise settles once the iterator is read to the end),
        // so the subscription is still read below, where every message is handed back.
        if (this.stopped) void messages.close();
        failures = 0;
        await this.read(messages);
      } catch (error) {
        if (failures++ === 0) this.options.logger.warn({ err: error, durable: this.options.durable }, 'cannot consume the stream yet; retrying');
      }
      if (!this.stopped) await this.pause(Math.min(500 * 2 ** Math.min(failures, 4), 5000));
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.retryDone = resolve;
      this.retry = setTimeout(resolve, ms);
    });
  }

  private async subscribe(): Promise<ConsumerMessages> {
    const { nats, durable } = this.options;
    await ensureStream(nats, this.options.stream);
    const stream = this.options.stream.name;
    const config = {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(this.ackWaitMs),
      max_ack_pending: 20000,
      ...(this.options.filterSubject ? { filter_subject: this.options.filterSubject } : {}),
    };
    const jsm = await jetstreamManager(nats);
    const info = await jsm.consumers.info(stream, durable).catch((error: unknown) => {
      if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound) return undefined;
      throw error;
    });
    if (info && this.options.ordered && info.delivered.stream_seq > info.ack_floor.stream_seq) {
      // Messages were delivered and not acknowledged: start again from the first of them (JetStream would
      // hand them out again only after the ack wait, behind newer ones). JetStream cannot move a durable
      // consumer back, so it is made again; a handler skips what it handled after all.
      const from = info.ack_floor.stream_seq + 1;
      this.options.logger.info({ durable, from, unacknowledged: info.num_ack_pending }, 'consuming again from the first unacknowledged message');
      await jsm.consumers.delete(stream, durable);
      await jsm.consumers.add(stream, { ...config, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from });
    } else if (info) {
      const { durable_name: _name, deliver_policy: _policy, ...changeable } = config;
      await jsm.consumers.update(stream, durable, changeable);
    } else {
      await jsm.consumers.add(stream, config);
    }
    const consumer = await jetstream(nats).consumers.get(stream, durable);
    this.messages = await consumer.consume({ max_messages: Math.max(2 * (this.options.maxBatch ?? 256), 64) });
    return this.messages;
  }

  /** Stops taking messages and waits for the batches in progress; the unacknowledged rest is redelivered. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.retryDone?.();
    this.retryWake?.();
    await this.messages?.close().catch(() => undefined);
    await this.reading;
    // No batch starts once stopped, so the set only shrinks.
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
    clearInterval(this.keepAlive);
    for (const { message } of this.queue.splice(0)) message.nak();
  }

  private async read(messages: ConsumerMessages): Promise<void> {
    for await (const message of messages) {
      if (this.stopped) {
        message.nak();
        continue;
      }
      this.queue.push({ message, since: Date.now() });
      // At the end of the turn, so that the messages that arrived together join one batch.
      if (!this.dispatchDue) {
        this.dispatchDue = true;
        setImmediate(() => {
          this.dispatchDue = false;
          this.dispatch();
        });
      }
    }
  }

  /**
   * Hands queued messages to the handler while it has room: called when messages arrive and when a batch
   * ends, so no loop waits for either (the structure it replaced woke a waiting loop through a shared
   * callback and `Promise.race` over the batches in flight).
   */
  private dispatch(): void {
    const maxBatch = this.options.maxBatch ?? 256;
    while (!this.stopped && this.queue.length > 0 && this.inFlight.size < this.concurrent) {
      const now = Date.now();
      const decoded: T[] = [];
      const accepted: JsMsg[] = [];
      for (const { message, since } of this.queue.splice(0, maxBatch)) {
        try {
          decoded.push(this.options.decode(message.data, message.subject));
        } catch (error) {
          this.options.logger.error({ err: error, subject: message.subject, seq: message.seq }, 'malformed message on the stream; terminated');
          message.term();
          continue;
        }
        // Held here a while: its ack wait begins again, so the handler has all of it.
        if (now - since >= this.ackWaitMs / 4) message.working();
        accepted.push(message);
      }
      if (accepted.length === 0) continue;
      const handling: Promise<void> = this.handleBatch(decoded, accepted)
        .catch((error: unknown) => this.options.logger.error({ err: error, messages: accepted.length }, 'stream batch not settled; JetStream redelivers it after the ack wait'))
        .finally(() => {
          this.inFlight.delete(handling);
          this.dispatch();
        });
      this.inFlight.add(handling);
    }
  }

  /**
   * The ack wait runs from delivery, and queued messages wait for the handler: without this, one that
   * waited longer than the ack wait would be handed out again (here or to another replica) while still
   * queued here, and handled twice.
   */
  private touchQueued(): void {
    const now = Date.now();
    for (const held of this.queue) {
      held.message.working();
      held.since = now;
    }
  }

  private async handleBatch(decoded: T[], accepted: JsMsg[]): Promise<void> {
    if (this.options.ordered) return this.handleInPlace(decoded, accepted);
    try {
      await this.options.handle(decoded);
      for (const message of accepted) message.ack();
    } catch (error) {
      this.options.logger.warn({ err: error, messages: accepted.length }, 'stream batch failed; it will be redelivered');
      const delay = this.options.retryDelayMs ?? 1000;
      for (const message of accepted) message.nak(delay);
    }
  }

  /** `ordered`: tries the batch until it succeeds, keeping its messages (and every later one) meanwhile. */
  private async handleInPlace(decoded: T[], accepted: JsMsg[]): Promise<void> {
    let delay = this.options.retryDelayMs ?? 1000;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.options.handle(decoded);
        for (const message of accepted) message.ack();
        return;
      } catch (error) {
        this.options.logger.warn({ err: error, messages: accepted.length, attempt }, 'stream batch failed; trying it again before any later message');
      }
      if (this.stopped) break;
      // Still being handled: JetStream must not hand them out again meanwhile.
      for (const message of accepted) message.working();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        this.retryWake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.retryWake = undefined;
      delay = Math.min(delay * 2, ORDERED_RETRY_MAX_MS);
      if (this.stopped) break;
    }
    // Stopped: the next consumer starts again from the first of them.
    for (const message of accepted) message.nak();
  }
}
