import { ServerNats } from '@nestjs/microservices';
import { headers as natsHeaders, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { ERROR_STATUS, ErrorCode, Headers, isErrorCode } from '@tracking/contracts';
import { type Logger, runInRequestContext } from '@tracking/core';
import { InFlight } from './in-flight.js';
import { BARE_JSON, JsonReply, REPLY_FORMAT_HEADER } from './json-reply.js';
import { RPC_OK, type RpcMetrics } from './rpc-metrics.js';
import { NatsConnectionState } from './nats-connection.js';
import { RPC_SENT_AT_HEADER, RPC_TIMEOUT_HEADER, rpcDeadline } from './rpc-deadline.js';
import { TurnBatch } from './turn-batch.js';

type NatsServerOptions = ConstructorParameters<typeof ServerNats>[0];

/** Where the server reports each message it handles; both optional. */
export interface NatsServerInstrumentation {
  metrics?: RpcMetrics;
  /** A debug line per message (a warning for a 5xx outcome), and the steps of a shutdown. */
  logger?: Logger;
}

/** A message being handled, from its arrival to its reply. */
interface Handling {
  readonly subject: string;
  readonly requestId: string | undefined;
  readonly started: number;
  /** A publisher was made for its reply: the reply settles it, not the end of `handleMessage`. */
  replying: boolean;
  settled: boolean;
}

/** The outcome of a message no reply is published for (an event, or a request without a reply subject). */
const NO_REPLY = 'no_reply';

/**
 * Nest's NATS transport with every subscription under a configured subject prefix, so that test
 * runs and environments sharing one NATS server never answer each other. Handlers keep the plain
 * subject of `@tracking/contracts` as their pattern.
 *
 * Each message is handled inside a request context holding its `x-request-id` header, so that the
 * handler's log lines and the NATS requests it makes in turn carry the id, and the caller's deadline
 * (`currentDeadline`) when the request says how long its caller waits; its duration and outcome go
 * to the metrics. `close()` drains: the broker stops routing messages here, the messages already
 * routed here are handled and answered, and only then does the connection close.
 */
export class PrefixedNatsServer extends ServerNats {
  private readonly prefixedSubscriptions: Subscription[] = [];
  private connection: NatsConnection | undefined;
  private readonly inFlight = new InFlight();
  private readonly handling = new WeakMap<Msg, Handling>();
  private readonly replies = new TurnBatch();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly prefix: string,
    private readonly natsOptions: NatsServerOptions,
    private readonly instrumentation: NatsServerInstrumentation = {},
  ) {
    super(natsOptions);
  }

  /** The connection's state is followed from its first moment (readiness and liveness ask it). */
  override async createNatsClient(): Promise<NatsConnection> {
    const connection = (await super.createNatsClient()) as NatsConnection;
    NatsConnectionState.watch(connection);
    return connection;
  }

  /**
   * Nest reports the server as listening once the subscriptions are queued on the socket, before
   * the broker has them; a request in that gap gets "no responders" (a 503 from a running replica).
   * A flush round trip closes the gap.
   */
  override start(callback: (err?: unknown) => void): void {
    const client = this.unwrap<NatsConnection>();
    this.bindEvents(client);
    client.flush().then(() => callback(), callback);
  }

  override bindEvents(client: NatsConnection): void {
    this.connection = client;
    for (const [channel, handler] of this.messageHandlers) {
      const queue = (handler.extras?.queue as string | undefined) ?? this.natsOptions.queue;
      const subscription = client.subscribe(this.prefix + channel, {
        ...(queue ? { queue } : {}),
        callback: this.getMessageHandler(channel).bind(this) as never,
      });
      this.prefixedSubscriptions.push(subscription);
    }
  }

  /**
   * Our patterns are plain subjects. Nest's version first tries `JSON.parse` on the pattern, for object
   * patterns, and so throws and catches a `SyntaxError` for every message. Speed machinery: the simple
   * version is Nest's own (docs/benchmark-history.md, "The fourth round").
   */
  override getRouteFromPattern(pattern: string): string {
    return this.messageHandlers.has(pattern) ? pattern : super.getRouteFromPattern(pattern);
  }

  override async handleMessage(channel: string, message: Msg): Promise<void> {
    const handling: Handling = {
      subject: channel,
      requestId: message.headers?.get(Headers.requestId) || undefined,
      started: performance.now(),
      replying: false,
      settled: false,
    };
    this.handling.set(message, handling);
    this.inFlight.begin();
    this.instrumentation.metrics?.countRpcServerInFlight(channel, 1);
    try {
      const deadline = deadlineOf(message);
      await runInRequestContext({ requestId: handling.requestId, deadline }, () => super.handleMessage(channel, message));
    } catch (error) {
      this.settle(handling, ErrorCode.InternalError);
      throw error;
    } finally {
      if (!handling.replying) this.settle(handling, NO_REPLY);
    }
  }

  /**
   * Nest publishes the reply after `handleMessage` has returned; the reply is where a message ends.
   * Replies wait for the end of the event loop's turn and go out together (`replies`), so that the
   * NATS client writes the replies of every query that finished in that turn with one socket write, and
   * the NATS server reads them with one read (speed machinery, `TurnBatch`; the simple version is
   * Nest's publisher called at once). A message is settled once its reply is handed to the client.
   */
  override getPublisher(message: Msg, id: string, context: Parameters<ServerNats['getPublisher']>[2]): (response: unknown) => unknown {
    const nestPublish = super.getPublisher(message, id, context);
    const publish = (response: unknown) => nestPublish(withEmptyReply(response));
    const handling = this.handling.get(message);
    if (!handling) return publish;
    handling.replying = true;
    return (response) => {
      this.replies.add(() => {
        try {
          const reply = (response as { response?: unknown } | null)?.response;
          if (reply instanceof JsonReply && message.reply) respondJson(message, id, reply.json, response as Packet);
          else publish(response);
        } catch (error) {
          // The connection closed under the reply: the caller times out, as it would on a lost message.
          this.instrumentation.logger?.warn({ err: error, subject: handling.subject }, 'reply not sent');
        } finally {
          this.settle(handling, outcomeOf(response));
        }
      });
    };
  }

  override close(): Promise<void> {
    this.closing ??= this.drainAndClose();
    return this.closing;
  }

  private async drainAndClose(): Promise<void> {
    const connection = this.connection;
    if (connection && !connection.isClosed()) {
      // `drain`, not `unsubscribe`: a message the broker routed here before it processed the UNSUB is
      // still handled, where `unsubscribe` would drop it and leave its caller waiting for a timeout.
      await Promise.allSettled(this.prefixedSubscriptions.splice(0).map((subscription) => subscription.drain()));
      this.instrumentation.logger?.info({ inFlight: this.inFlight.size }, 'NATS subscriptions drained; finishing the messages in flight');
      await this.inFlight.idle();
      // The replies are on their way once the broker has seen them.
      if (!connection.isClosed()) await connection.flush();
    }
    this.connection = undefined;
    await super.close();
  }

  private settle(handling: Handling, outcome: string): void {
    if (handling.settled) return;
    handling.settled = true;
    const seconds = (performance.now() - handling.started) / 1000;
    this.instrumentation.metrics?.countRpcServerInFlight(handling.subject, -1);
    this.instrumentation.metrics?.observeRpcServer(handling.subject, outcome, seconds);
    this.logHandled(handling, outcome, seconds);
    this.inFlight.end();
  }

  /** Success and client errors at debug, so that a busy service writes nothing per message at `info`. */
  private logHandled(handling: Handling, outcome: string, seconds: number): void {
    const logger = this.instrumentation.logger;
    if (!logger) return;
    const line = { subject: handling.subject, outcome, durationMs: Math.round(seconds * 1000), requestId: handling.requestId };
    if (isErrorCode(outcome) && ERROR_STATUS[outcome] >= 500) logger.warn(line, 'message handled');
    else logger.debug(line, 'message handled');
  }
}

/** When the caller of `message` stops waiting (epoch ms), from its headers (`rpcDeadline`); undefined without a timeout. */
function deadlineOf(message: Msg): number | undefined {
  return rpcDeadline(message.headers?.get(RPC_TIMEOUT_HEADER), message.headers?.get(RPC_SENT_AT_HEADER), Date.now());
}

interface Packet {
  isDisposed?: boolean;
}

/**
 * A handler that returns nothing answers `null`: Nest puts `response: undefined` in its packet, which
 * `JSON.stringify` drops, and a packet without `response` is an unusable reply to the caller (502).
 */
function withEmptyReply(packet: unknown): unknown {
  if (typeof packet === 'object' && packet !== null && 'response' in packet && packet.response === undefined) {
    return { ...packet, response: null };
  }
  return packet;
}

/**
 * Sends a handler's `JsonReply` without parsing it: bare, with the reply-format header, to a caller that
 * accepts that; else inside the packet Nest's serializer would have written (`{"id", "response",
 * "isDisposed"}`), assembled as text. Speed machinery (`JsonReply`): the simple version is `publish`.
 */
function respondJson(message: Msg, id: string, json: string | Buffer, packet: Packet): void {
  if (message.headers?.get(REPLY_FORMAT_HEADER) === BARE_JSON) {
    const headers = natsHeaders();
    headers.set(REPLY_FORMAT_HEADER, BARE_JSON);
    message.respond(json, { headers });
    return;
  }
  const head = `{"id":${JSON.stringify(id)},"response":`;
  const tail = `${packet.isDisposed ? ',"isDisposed":true' : ''}}`;
  message.respond(typeof json === 'string' ? head + json + tail : Buffer.concat([Buffer.from(head), json, Buffer.from(tail)]));
}

/** `ok`, or the error code of the reply (`InternalError` when it has none). */
function outcomeOf(response: unknown): string {
  const err = (response as { err?: unknown } | null)?.err;
  if (err === undefined || err === null) return RPC_OK;
  const code = (err as { code?: unknown }).code;
  return isErrorCode(code) ? code : ErrorCode.InternalError;
}
