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
  /** Subjects of the stream this consumer reads (all when absent). */
  filterSubjects?: string[];
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
  /** How long a message may stay unacknowledged before JetStream redelivers it (to any replica). */
  ackWaitMs?: number;
  retryDelayMs?: number;
}

/**
 * A durable pull consumer that hands messages to its handler in batches as they come: one message when
 * traffic is light (no waiting to fill a batch), up to `maxBatch` under load, one batch at a time per
 * process. Replicas sharing the durable name share the work; a replica that dies leaves its unacknowledged
 * messages to the others after `ackWaitMs`.
 */
export class DurableConsumer<T> {
  private messages: ConsumerMessages | undefined;
  private readonly queue: JsMsg[] = [];
  private draining: Promise<void> | undefined;
  private reading: Promise<void> | undefined;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private retryDone: (() => void) | undefined;
  /** Wakes a drain that waits for its batches in flight when a message comes (concurrentBatches > 1). */
  private wake: (() => void) | undefined;

  constructor(private readonly options: DurableConsumerOptions<T>) {}

  /**
   * Starts consuming; never fails: while the stream or NATS is unavailable (JetStream down, permissions
   * missing) it logs and tries again every few seconds, and it starts again when its subscription ends.
   */
  start(): void {
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
      ack_wait: nanos(this.options.ackWaitMs ?? 30000),
      max_ack_pending: 20000,
      ...(this.options.filterSubjects ? { filter_subjects: this.options.filterSubjects } : {}),
    };
    const jsm = await jetstreamManager(nats);
    const exists = await jsm.consumers.info(stream, durable).then(
      () => true,
      (error: unknown) => {
        if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound) return false;
        throw error;
      },
    );
    if (exists) {
      const { durable_name: _name, deliver_policy: _policy, ...changeable } = config;
      await jsm.consumers.update(stream, durable, changeable);
    } else {
      await jsm.consumers.add(stream, config);
    }
    const consumer = await jetstream(nats).consumers.get(stream, durable);
    this.messages = await consumer.consume({ max_messages: Math.max(2 * (this.options.maxBatch ?? 256), 64) });
    return this.messages;
  }

  /** Stops taking messages and waits for the batch in progress; the unacknowledged rest is redelivered. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.retryDone?.();
    await this.messages?.close().catch(() => undefined);
    this.wake?.();
    await this.reading;
    await this.draining;
    for (const message of this.queue.splice(0)) message.nak();
  }

  private async read(messages: ConsumerMessages): Promise<void> {
    for await (const message of messages) {
      if (this.stopped) {
        message.nak();
        continue;
      }
      this.queue.push(message);
      if (!this.draining) this.draining = this.drain();
      else this.wake?.();
    }
  }

  private async drain(): Promise<void> {
    const maxBatch = this.options.maxBatch ?? 256;
    const concurrent = this.options.concurrentBatches ?? 1;
    const inFlight = new Set<Promise<void>>();
    // Let the messages that arrived together join one batch.
    await Promise.resolve();
    for (;;) {
      if (this.queue.length === 0 || this.stopped) {
        // Batches still in flight: wait for one of them or for a new message, then look again (a new
        // drain never runs beside this one).
        if (inFlight.size > 0) {
          await Promise.race([...inFlight, new Promise<void>((resolve) => (this.wake = resolve))]);
          this.wake = undefined;
          continue;
        }
        // Checked and cleared in one turn, so that a message queued after this check starts a new drain.
        this.draining = undefined;
        return;
      }
      const batch = this.queue.splice(0, maxBatch);
      const decoded: T[] = [];
      const accepted: JsMsg[] = [];
      for (const message of batch) {
        try {
          decoded.push(this.options.decode(message.data, message.subject));
          accepted.push(message);
        } catch (error) {
          this.options.logger.error({ err: error, subject: message.subject, seq: message.seq }, 'malformed message on the stream; terminated');
          message.term();
        }
      }
      if (decoded.length === 0) continue;
      const handling = this.handleBatch(decoded, accepted);
      inFlight.add(handling);
      void handling.finally(() => inFlight.delete(handling));
      if (inFlight.size >= concurrent) await Promise.race(inFlight);
    }
  }

  private async handleBatch(decoded: T[], accepted: JsMsg[]): Promise<void> {
    try {
      await this.options.handle(decoded);
      for (const message of accepted) message.ack();
    } catch (error) {
      this.options.logger.warn({ err: error, messages: accepted.length }, 'stream batch failed; it will be redelivered');
      const delay = this.options.retryDelayMs ?? 1000;
      for (const message of accepted) message.nak(delay);
    }
  }
}
