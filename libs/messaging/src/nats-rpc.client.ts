import { randomUUID } from 'node:crypto';
import { createInbox, headers as natsHeaders, type Msg, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, type ErrorBody, Headers, isErrorCode, type ReplyOf, type RequestOf, type Subject } from '@tracking/contracts';
import { currentRequestId, DomainError } from '@tracking/core';
import { LRUCache } from 'lru-cache';
import { BARE_JSON, type JsonBytes, REPLY_FORMAT_HEADER } from './json-reply.js';
import { NatsConnectionState } from './nats-connection.js';
import { RPC_SENT_AT_HEADER, RPC_TIMEOUT_HEADER } from './rpc-deadline.js';
import { RPC_OK, type RpcMetrics } from './rpc-metrics.js';
import { TurnBatch } from './turn-batch.js';

export interface RpcCallOptions {
  /** Default: the request this code works for (`runInRequestContext`), so nested calls carry it on. */
  requestId?: string;
  timeoutMs?: number;
}

/**
 * Request/reply over NATS in the packet format of Nest's NATS transport, with failures mapped to the
 * public error codes: no responder -> `ServiceUnavailable`, timeout -> `GatewayTimeout`, a reply that
 * is not a well-formed packet -> `BadGateway`; a service's own error passes through unchanged.
 * Each call's duration and outcome go to `metrics`, when given.
 *
 * While the connection is down (disconnected and reconnecting, or closed) a call fails at once with
 * `ServiceUnavailable` instead of waiting in the client's reconnection buffer for its timeout. A request
 * sent before the connection dropped keeps waiting: its reply may still come after a quick reconnection,
 * and if it does not, its outcome is unknown, which is what `GatewayTimeout` says.
 */
export class NatsRpcClient {
  private inbox?: ReplyInbox;
  private readonly state: NatsConnectionState;

  constructor(
    private readonly connection: NatsConnection,
    private readonly prefix: string,
    private readonly defaultTimeoutMs: number,
    private readonly metrics?: RpcMetrics,
    /** The connection's `inboxPrefix` option (`_INBOX` unless configured), for the reply subjects. */
    private readonly inboxPrefix?: string,
  ) {
    this.state = NatsConnectionState.of(connection);
  }

  /** Whether a call can be sent now (readiness uses it). */
  get connected(): boolean {
    return this.state.connected;
  }

  /** Sends `data` on `subject` and answers the reply; both types come from the subject's contract (`Contracts`). */
  async call<S extends Subject>(subject: S, data: RequestOf<S>, options: RpcCallOptions = {}): Promise<ReplyOf<S>> {
    return this.measured(subject, async () => parseReply<ReplyOf<S>>((await this.request(subject, data, options, false)).data));
  }

  /**
   * Like `call`, but the response as JSON bytes, for a caller that only passes it on: a service that
   * answers with a `JsonReply` sends them as it built them, nobody parses them; any other answer is
   * parsed as usual and its response encoded. Speed machinery (`JsonReply`): the simple version is `call`.
   */
  async callJson<S extends Subject>(subject: S, data: RequestOf<S>, options: RpcCallOptions = {}): Promise<JsonBytes<ReplyOf<S>>> {
    return this.measured(subject, async () => {
      const reply = await this.request(subject, data, options, true);
      if (reply.headers?.get(REPLY_FORMAT_HEADER) === BARE_JSON) return bareJson(reply.data);
      return Buffer.from(JSON.stringify(parseReply<ReplyOf<S>>(reply.data)));
    });
  }

  private async measured<R>(subject: Subject, call: () => Promise<R>): Promise<R> {
    const started = performance.now();
    try {
      const response = await call();
      this.metrics?.observeRpcClient(subject, RPC_OK, (performance.now() - started) / 1000);
      return response;
    } catch (error) {
      const outcome = error instanceof DomainError ? error.code : ErrorCode.InternalError;
      this.metrics?.observeRpcClient(subject, outcome, (performance.now() - started) / 1000);
      throw error;
    }
  }

  private request(subject: Subject, data: unknown, options: RpcCallOptions, acceptsBareJson: boolean): Promise<Msg> {
    const headers = natsHeaders();
    const requestId = options.requestId ?? currentRequestId();
    if (requestId) headers.set(Headers.requestId, requestId);
    if (acceptsBareJson) headers.set(REPLY_FORMAT_HEADER, BARE_JSON);
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    // How long the caller waits and since when: the service stops work nobody waits for (`rpcDeadline`).
    headers.set(RPC_TIMEOUT_HEADER, String(timeoutMs));
    headers.set(RPC_SENT_AT_HEADER, String(Date.now()));
    // Down: nothing would answer before the timeout, and a request left in the reconnection buffer may
    // be dropped or sent long after its caller gave up.
    if (!this.state.connected) return Promise.reject(brokerUnreachable());
    const packet = JSON.stringify({ pattern: subject, data, id: randomUUID() });
    if (this.inbox === undefined || this.inbox.closed) {
      try {
        this.inbox = new ReplyInbox(this.connection, this.inboxPrefix);
      } catch {
        // The connection is closed or draining: it takes no new subscription.
        return Promise.reject(brokerUnreachable());
      }
    }
    return this.inbox.request(this.prefix + subject, packet, headers, timeoutMs);
  }
}

/**
 * Requests one client may have waiting for their replies at once: far above what a process serves (the
 * gateway's default connection cap is 4096); lru-cache allocates its slots up front (some 1.5 MB here).
 */
export const RPC_MAX_WAITING = 65536;

interface Waiting {
  resolve: (reply: Msg) => void;
  reject: (error: DomainError) => void;
  timer: NodeJS.Timeout;
}

/**
 * The replies to one client's requests: a single subscription on `<inbox>.*`, and each request waiting
 * under its own token, as nats.js's own request does, but without the `Error` that nats.js builds for
 * every request it completes. No responder, a timeout and a closed connection become the public error
 * codes here. Speed machinery (docs/architecture.md, "Speed machinery"): the simple version is
 * `connection.request()` (docs/benchmark-history.md, "The third round").
 */
class ReplyInbox {
  private readonly inbox: string;
  /**
   * Not a bare `Map`: a request comes and goes with every call and its entry reaches the reply, and a
   * long-lived `Map` keeps every value it held until the next full collection (docs/benchmark-history.md,
   * "The seventh round"). lru-cache keeps its values in slots of an array and only their indices in its
   * `Map`, which `bench/map-churn.mjs` shows to behave like the hand-written dictionary it replaced. Its
   * bound is never reached by eviction: a request beyond it is refused (`request`).
   */
  private readonly waiting = new LRUCache<string, Waiting>({ max: RPC_MAX_WAITING });
  /** The requests of one event-loop turn leave together: one socket write for all of them. */
  private readonly requests = new TurnBatch();
  private nextToken = 0;
  /** Set when the subscription or the connection ended: the client then opens a new inbox. */
  closed = false;

  constructor(
    private readonly connection: NatsConnection,
    inboxPrefix?: string,
  ) {
    this.inbox = `${createInbox(inboxPrefix)}.`;
    connection.subscribe(`${this.inbox}*`, { callback: (error, reply) => (error ? this.close() : this.deliver(reply)) });
    void connection.closed().then(() => this.close());
  }

  request(subject: string, packet: string, headers: MsgHdrs, timeoutMs: number): Promise<Msg> {
    // Full: refused rather than evicting (and so failing) the oldest request still waiting.
    if (this.waiting.size >= RPC_MAX_WAITING) {
      return Promise.reject(new DomainError(ErrorCode.ServiceUnavailable, 'Too many requests are waiting for the services; retry after a short delay.'));
    }
    const token = (this.nextToken++).toString(36);
    return new Promise<Msg>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(token);
        reject(new DomainError(ErrorCode.GatewayTimeout, 'The service did not answer in time; retry with backoff.'));
      }, timeoutMs);
      this.waiting.set(token, { resolve, reject, timer });
      this.requests.add(() => {
        // The inbox closed within this turn and has already failed the request: sending it now would let
        // the service act on a request whose caller was told it was not sent.
        if (!this.waiting.has(token)) return;
        try {
          this.connection.publish(subject, packet, { reply: this.inbox + token, headers });
        } catch {
          // Closed or draining: nothing was sent.
          this.waiting.delete(token);
          clearTimeout(timer);
          reject(brokerUnreachable());
        }
      });
    });
  }

  private deliver(reply: Msg): void {
    const token = reply.subject.slice(this.inbox.length);
    const waiting = this.waiting.get(token);
    // A reply after its request timed out (or a second reply) has nobody waiting for it.
    if (waiting === undefined) return;
    this.waiting.delete(token);
    clearTimeout(waiting.timer);
    // The server answers a request that no subscriber took with an empty 503 status message.
    if (reply.data.length === 0 && reply.headers?.code === 503) {
      waiting.reject(new DomainError(ErrorCode.ServiceUnavailable, 'The service is not available; retry after a short delay.'));
    } else {
      waiting.resolve(reply);
    }
  }

  /** Fails every waiting request: their replies can no longer arrive. */
  private close(): void {
    this.closed = true;
    for (const waiting of this.waiting.values()) {
      clearTimeout(waiting.timer);
      waiting.reject(brokerUnreachable());
    }
    this.waiting.clear();
  }
}

function brokerUnreachable(): DomainError {
  return new DomainError(ErrorCode.ServiceUnavailable, 'The message broker is not reachable; retry after a short delay.');
}

/** The payload of a bare JSON reply, as a Buffer over the same memory; a JSON object or array, else 502. */
function bareJson<T>(raw: Uint8Array): JsonBytes<T> {
  const first = raw[0];
  // `{` or `[`: a service's JsonReply always holds an object or an array.
  if (first !== 0x7b && first !== 0x5b) throw badGateway();
  return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
}

function parseReply<T>(raw: Uint8Array): T {
  let packet: unknown;
  try {
    // A view, not a copy (`Buffer.from(raw)` would copy the payload first).
    packet = JSON.parse(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8'));
  } catch {
    throw badGateway();
  }
  if (typeof packet !== 'object' || packet === null) throw badGateway();
  const { err, response } = packet as { err?: unknown; response?: unknown };
  if (err !== undefined && err !== null) throw toDomainError(err);
  if (!('response' in packet)) throw badGateway();
  return response as T;
}

function toDomainError(err: unknown): DomainError {
  const body = err as Partial<ErrorBody>;
  if (typeof body !== 'object' || !isErrorCode(body.code) || typeof body.message !== 'string') {
    return badGateway();
  }
  return new DomainError(body.code, body.message, body.details, typeof body.id === 'string' ? body.id : undefined);
}

function badGateway(): DomainError {
  return new DomainError(ErrorCode.BadGateway, 'The service sent an unusable reply; retry after a short delay.');
}
