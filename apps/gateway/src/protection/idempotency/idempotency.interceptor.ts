import { randomUUID } from 'node:crypto';
import { type CallHandler, type ExecutionContext, Inject, Injectable, type NestInterceptor } from '@nestjs/common';
import { ERROR_STATUS, ErrorCode } from '@tracking/contracts';
import { DomainError, type Logger } from '@tracking/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { from, lastValueFrom, type Observable } from 'rxjs';
import type { Principal } from '../../auth/principal.js';
import { errorEnvelope } from '../../http/error.filter.js';
import { LOGGER } from '../../tokens.js';
import { ProtectionMetrics } from '../protection.metrics.js';
import { type IdempotencyRecord, IdempotencyStore, type Reservation, type StoredResponse } from './idempotency.store.js';
import { readIdempotencyKey, requestFingerprint } from './request-fingerprint.js';

/** `details.policy` of the 429 for an application holding too many idempotency keys. */
export const IDEMPOTENCY_KEYS_POLICY = 'idempotency-keys';
/** `details.policy` of the 429 for an application whose stored responses fill its byte budget. */
export const IDEMPOTENCY_BYTES_POLICY = 'idempotency-bytes';
/** Set on a replayed response. */
export const REPLAYED_HEADER = 'Idempotent-Replayed';
/**
 * `Idempotent-Stored: false` on the response to a keyed POST whose outcome was not stored (larger than
 * IDEMPOTENCY_MAX_RESPONSE_BYTES, or beyond the application's byte budget): the key is free again, and a
 * retry with it runs the request again.
 */
export const STORED_HEADER = 'Idempotent-Stored';
/** The response headers that are part of an outcome and replayed with it. */
const REPLAYED_HEADERS = ['location', 'etag'] as const;
/**
 * Errors that are outcomes of the request, decided by the service that ran it, and replayed like a
 * success: 409 and 412. Not stored: 400 (the request was refused before anything was done), 404 (nothing
 * was done either, and what was missing may exist by the retry), 429 from a service's quota (the client
 * is told to come back), 5xx (the client should retry). 401, 403, 413, 415 and the gateway's 429 never
 * get this far.
 */
const STORED_ERROR_STATUSES: ReadonlySet<number> = new Set([409, 412]);

type AuthenticatedRequest = FastifyRequest & { user?: Principal };

/**
 * `Idempotency-Key` on every authenticated POST (`@ApiController` binds it to every POST route, so
 * routes added later are covered). It runs after authentication and the account checks, whose refusals
 * are therefore never stored, and before the body is validated. The first request with a key runs and
 * its outcome is stored for 24 h; the same key with the same request replays it; with another request
 * it is 422 `IdempotencyKeyReused`; while the first still runs, 409 `IdempotencyKeyInUse`. Keys belong
 * to the application (the token's `sub`). Without Redis a keyed POST is refused (503), never run
 * unprotected.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly store: IdempotencyStore,
    private readonly metrics: ProtectionMetrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const request = http.getRequest<AuthenticatedRequest>();
    const principal = request.user;
    if (request.method !== 'POST' || principal === undefined) return next.handle();
    const key = readIdempotencyKey(request.headers['idempotency-key']);
    if (key === undefined) return next.handle();
    const record = this.store.recordKey(principal.applicationId, key);
    // A promise of our own, not the Observable Nest subscribes to: should the client go away, Nest
    // unsubscribes, but the outcome must still be stored once the handler finishes.
    return from(this.handleKeyed(request, http.getResponse<FastifyReply>(), record, next));
  }

  private async handleKeyed(request: FastifyRequest, reply: FastifyReply, record: IdempotencyRecord, next: CallHandler): Promise<unknown> {
    const fingerprint = requestFingerprint(request.method, request.url, request.body);
    let reservation: Reservation;
    try {
      reservation = await this.store.reserve(record, fingerprint);
    } catch (error) {
      this.reportFailure(error, 'refusing keyed POST: Redis did not answer');
      throw new DomainError(ErrorCode.ServiceUnavailable, 'Requests with an Idempotency-Key cannot be accepted right now; retry later.');
    }
    switch (reservation.outcome) {
      case 'reused':
        throw new DomainError(ErrorCode.IdempotencyKeyReused, 'This Idempotency-Key was used for another request; use a new key for a new request.');
      case 'full': {
        const seconds = Math.max(1, Math.ceil(reservation.retryAfterMs / 1000));
        reply.header('Retry-After', String(seconds));
        if (reservation.limit === 'bytes') {
          throw new DomainError(
            ErrorCode.RateLimitExceeded,
            `The responses this application's idempotency keys keep fill its ${this.store.maxBytes} bytes; retry after the ` +
              'Retry-After delay, when the oldest expires, or send the request without a key.',
            { policy: IDEMPOTENCY_BYTES_POLICY, limit: this.store.maxBytes },
          );
        }
        throw new DomainError(
          ErrorCode.RateLimitExceeded,
          `This application holds ${this.store.maxKeys} idempotency keys, the most it may; retry after the Retry-After delay, ` +
            'when the oldest expires, or send the request without a key.',
          { policy: IDEMPOTENCY_KEYS_POLICY, limit: this.store.maxKeys },
        );
      }
      case 'in-flight':
        reply.header('Retry-After', '1');
        throw new DomainError(ErrorCode.IdempotencyKeyInUse, 'A request with this Idempotency-Key is still running; retry later to get its response.');
      case 'completed':
        this.metrics.idempotentReplays.inc();
        return replay(reply, reservation.response);
      case 'acquired':
        return this.run(record, reservation.owner, fingerprint, reply, next);
    }
  }

  /** Runs the request and stores its outcome, or frees the key when the outcome is not stored. */
  private async run(record: IdempotencyRecord, owner: string, fingerprint: string, reply: FastifyReply, next: CallHandler): Promise<unknown> {
    let value: unknown;
    try {
      value = await lastValueFrom(next.handle(), { defaultValue: undefined });
    } catch (error) {
      const stored = storedError(error);
      if (stored) {
        await this.finish(record, owner, fingerprint, reply, { status: ERROR_STATUS[stored.code], headers: {}, body: JSON.stringify(errorEnvelope(stored)) });
        throw stored;
      }
      // A gateway timeout leaves the outcome unknown (the service may still commit): the key stays
      // taken until its marker expires, so a quick retry gets 409 rather than running a second time.
      if (!(error instanceof DomainError && error.code === ErrorCode.GatewayTimeout)) await this.free(record, owner);
      throw error;
    }
    await this.finish(record, owner, fingerprint, reply, {
      status: reply.statusCode,
      headers: outcomeHeaders(reply),
      body: value === undefined ? '' : JSON.stringify(value),
    });
    return value;
  }

  /**
   * Stores the outcome; if Redis fails now, the work is done anyway and the client gets its answer. An
   * outcome too large to store, or beyond the application's byte budget, frees the key and says so.
   */
  private async finish(record: IdempotencyRecord, owner: string, fingerprint: string, reply: FastifyReply, response: StoredResponse): Promise<void> {
    try {
      const completion = await this.store.complete(record, owner, fingerprint, response);
      if (completion === 'too-large' || completion === 'over-budget') {
        this.metrics.idempotencyNotStored.inc({ reason: completion });
        reply.header(STORED_HEADER, 'false');
      }
    } catch (error) {
      this.reportFailure(error, 'the outcome of a keyed POST was not stored: Redis did not answer');
    }
  }

  private async free(record: IdempotencyRecord, owner: string): Promise<void> {
    try {
      await this.store.release(record, owner);
    } catch (error) {
      this.reportFailure(error, 'an idempotency key was not released; it expires on its own');
    }
  }

  private reportFailure(error: unknown, message: string): void {
    this.metrics.redisFailures.inc({ feature: 'idempotency' });
    this.store.failureLog.report((suppressed) => this.logger.warn({ err: error, suppressed }, message));
  }
}

/**
 * The error to send and store, when `error` is an outcome worth replaying. It gets its `id` here,
 * so that the stored envelope and the one sent now are the same.
 */
function storedError(error: unknown): DomainError | undefined {
  if (!(error instanceof DomainError) || !STORED_ERROR_STATUSES.has(ERROR_STATUS[error.code])) return undefined;
  return new DomainError(error.code, error.message, error.details, error.id ?? randomUUID());
}

function outcomeHeaders(reply: FastifyReply): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = reply.getHeader(name);
    if (value !== undefined) headers[name] = String(value);
  }
  return headers;
}

/** Sends the stored response again: same status, body and outcome headers, marked as a replay. */
function replay(reply: FastifyReply, response: StoredResponse): string | undefined {
  reply.status(response.status);
  for (const [name, value] of Object.entries(response.headers)) reply.header(name, value);
  reply.header(REPLAYED_HEADER, 'true');
  if (response.body === '') return undefined;
  // A string with a JSON content type is sent as it is, byte for byte.
  reply.header('Content-Type', 'application/json; charset=utf-8');
  return response.body;
}
