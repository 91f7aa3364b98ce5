import { randomUUID } from 'node:crypto';
import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, HttpStatus } from '@nestjs/common';
import { ERROR_STATUS, ErrorCode, type ErrorBody } from '@tracking/contracts';
import { DomainError, type Logger } from '@tracking/core';
import { isDatabaseUnavailable } from '@tracking/database';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { echo, MAX_ENVELOPE_FIELD_CHARS, MAX_ENVELOPE_MESSAGE_CHARS } from '@tracking/readings';
import { RepeatedLog } from './repeated-log.js';

/** Sends `error` in the envelope of the specification, with the status of `ERROR_STATUS`. */
export function sendError(reply: FastifyReply, error: DomainError): FastifyReply {
  const status = ERROR_STATUS[error.code];
  if (status === 503) reply.header('Retry-After', '1');
  return reply.status(status).send(errorEnvelope(error));
}

/**
 * The body `sendError` sends for `error`; an error without an `id` gets a new one. The message and the
 * string details are cut (`echo`): whatever the client sent that an error repeats, the envelope stays small.
 */
export function errorEnvelope(error: DomainError): { error: ErrorBody | Pick<ErrorBody, 'code' | 'message'> } {
  const message = echo(error.message, MAX_ENVELOPE_MESSAGE_CHARS);
  if (error.code === ErrorCode.Unauthorized) {
    // The specification's 401: code and message only, no id, no details.
    return { error: { code: error.code, message } };
  }
  const body: ErrorBody = { id: error.id ?? randomUUID(), code: error.code, message };
  if (error.details !== undefined && ERROR_STATUS[error.code] < 500) body.details = boundedDetails(error.details);
  return { error: body };
}

function boundedDetails(details: NonNullable<ErrorBody['details']>): NonNullable<ErrorBody['details']> {
  const bounded: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(details)) bounded[name] = typeof value === 'string' ? echo(value, MAX_ENVELOPE_FIELD_CHARS) : value;
  return bounded as NonNullable<ErrorBody['details']>;
}

/** Maps Fastify's own errors (body parsing, limits) to domain errors; anything unknown to `undefined`. */
export function fromFastifyError(error: { code?: string; statusCode?: number; message?: string }): DomainError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new DomainError(ErrorCode.UnsupportedMediaType, 'Request bodies must be sent as Content-Type: application/json.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new DomainError(ErrorCode.PayloadTooLarge, "The request body is larger than the route's limit: 1 MiB, 4 MiB for bulk requests, 16 KiB for the token request.");
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new DomainError(ErrorCode.MalformedRequest, 'The Content-Length header does not match the body.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new DomainError(ErrorCode.MalformedRequest, 'The request declares a JSON body but sends none.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new DomainError(ErrorCode.MalformedRequest, 'The request body is not valid JSON.');
    default:
      // secure-json-parse raises a plain SyntaxError (or a 400 naming JSON) for bad or hostile JSON.
      if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON|prototype/i.test(error.message ?? ''))) {
        return new DomainError(ErrorCode.MalformedRequest, 'The request body is not valid JSON.');
      }
      return undefined;
  }
}

/**
 * The gateway's only exception filter: every error leaves in the envelope, 5xx causes are logged, each
 * kind (code and message of the cause) at most once per `REPEATED_LOG_INTERVAL_MS` with the number left out.
 */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  private readonly failures = new RepeatedLog();

  constructor(private readonly logger: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    const error = this.toDomainError(exception);
    const status = ERROR_STATUS[error.code];
    if (status >= 500) {
      const id = error.id ?? randomUUID();
      const cause = exception instanceof Error ? exception.message : String(exception);
      this.failures.report(`${error.code}\u0000${cause}`, (suppressed) =>
        this.logger.error({ err: exception, errorId: id, requestId: request.id, code: error.code, suppressed }, 'request failed'),
      );
      sendError(reply, new DomainError(error.code, error.message, undefined, id));
      return;
    }
    this.logger.debug({ requestId: request.id, code: error.code }, error.message);
    sendError(reply, error);
  }

  private toDomainError(exception: unknown): DomainError {
    if (exception instanceof DomainError) return exception;
    // Nest wraps Fastify's own errors (body parsing, limits) in an HttpException with the original as cause.
    const cause = exception instanceof HttpException ? exception.cause : undefined;
    const fromCause = typeof cause === 'object' && cause !== null ? fromFastifyError(cause) : undefined;
    if (fromCause) return fromCause;
    if (exception instanceof HttpException) {
      switch (exception.getStatus()) {
        case HttpStatus.UNAUTHORIZED:
          return new DomainError(ErrorCode.Unauthorized, 'A valid bearer token is required.');
        case HttpStatus.NOT_FOUND:
          return new DomainError(ErrorCode.RouteNotFound, 'No such route.');
        case HttpStatus.PAYLOAD_TOO_LARGE:
          return new DomainError(ErrorCode.PayloadTooLarge, 'The request body is too large.');
        case HttpStatus.UNSUPPORTED_MEDIA_TYPE:
          return new DomainError(ErrorCode.UnsupportedMediaType, 'Request bodies must be application/json.');
      }
    }
    const fastifyError = typeof exception === 'object' && exception !== null ? fromFastifyError(exception) : undefined;
    if (fastifyError) return fastifyError;
    // The gateway's own database (identity, signing keys) out of reach: worth retrying, like a service that is away.
    if (isDatabaseUnavailable(exception)) {
      return new DomainError(ErrorCode.ServiceUnavailable, 'The gateway cannot reach its database; retry after the Retry-After delay.');
    }
    return new DomainError(ErrorCode.InternalError, 'The gateway failed unexpectedly; retry with backoff.');
  }
}
