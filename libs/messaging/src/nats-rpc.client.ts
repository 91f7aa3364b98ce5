import { randomUUID } from 'node:crypto';
import { headers as natsHeaders, type Msg, type NatsConnection, RequestError, TimeoutError } from '@nats-io/transport-node';
import { ErrorCode, type ErrorBody, Headers, isErrorCode, type Subject } from '@tracking/contracts';
import { currentRequestId, DomainError } from '@tracking/core';
import { BARE_JSON, type JsonBytes, REPLY_FORMAT_HEADER } from './json-reply.js';
import { RPC_OK, type RpcMetrics } from './rpc-metrics.js';

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
 */
export class NatsRpcClient {
  constructor(
    private readonly connection: NatsConnection,
    private readonly prefix: string,
    private readonly defaultTimeoutMs: number,
    private readonly metrics?: RpcMetrics,
  ) {}

  async call<T>(subject: Subject, data: unknown, options: RpcCallOptions = {}): Promise<T> {
    return this.measured(subject, async () => parseReply<T>((await this.request(subject, data, options, false)).data));
  }

  /**
   * Like `call`, but the response as JSON bytes, for a caller that only passes it on: a service that
   * answers with a `JsonReply` sends them as it built them, nobody parses them; any other answer is
   * parsed as usual and its response encoded.
   */
  async callJson<T>(subject: Subject, data: unknown, options: RpcCallOptions = {}): Promise<JsonBytes<T>> {
    return this.measured(subject, async () => {
      const reply = await this.request(subject, data, options, true);
      if (reply.headers?.get(REPLY_FORMAT_HEADER) === BARE_JSON) return bareJson(reply.data);
      return Buffer.from(JSON.stringify(parseReply<T>(reply.data)));
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

  private async request(subject: Subject, data: unknown, options: RpcCallOptions, acceptsBareJson: boolean): Promise<Msg> {
    const headers = natsHeaders();
    const requestId = options.requestId ?? currentRequestId();
    if (requestId) headers.set(Headers.requestId, requestId);
    if (acceptsBareJson) headers.set(REPLY_FORMAT_HEADER, BARE_JSON);
    const packet = JSON.stringify({ pattern: subject, data, id: randomUUID() });
    try {
      return await this.connection.request(this.prefix + subject, packet, {
        timeout: options.timeoutMs ?? this.defaultTimeoutMs,
        headers,
      });
    } catch (error) {
      throw mapTransportError(error);
    }
  }
}

/** The payload of a bare JSON reply, as a Buffer over the same memory; a JSON object or array, else 502. */
function bareJson<T>(raw: Uint8Array): JsonBytes<T> {
  const first = raw[0];
  // `{` or `[`: a service's JsonReply always holds an object or an array.
  if (first !== 0x7b && first !== 0x5b) throw badGateway();
  return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
}

function mapTransportError(error: unknown): DomainError {
  if (error instanceof RequestError && error.isNoResponders()) {
    return new DomainError(ErrorCode.ServiceUnavailable, 'The service is not available; retry after a short delay.');
  }
  if (error instanceof TimeoutError || (error instanceof RequestError && error.cause instanceof TimeoutError)) {
    return new DomainError(ErrorCode.GatewayTimeout, 'The service did not answer in time; retry with backoff.');
  }
  return new DomainError(ErrorCode.ServiceUnavailable, 'The message broker is not reachable; retry after a short delay.');
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
