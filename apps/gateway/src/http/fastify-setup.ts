import { randomUUID } from 'node:crypto';
import { type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ErrorCode } from '@tracking/contracts';
import { ConfigError, DomainError } from '@tracking/core';
import type { FastifyError, FastifyHttpOptions, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BODY_LIMIT_BYTES, type GatewayConfig } from '../config.js';
import { errorEnvelope, sendError } from './error.filter.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Longer than any URL Node accepts (16 KiB of request line and headers), so that a long path id
 * reaches its route and gets the resource's own 404 rather than Fastify's bare 414.
 */
const MAX_PARAM_LENGTH = 16 * 1024;

/** How often Node checks the header and request timeouts at most (its own default is every 30 s). */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;

/**
 * Fastify's server options: the body limit, request ids echoed when sane, else generated, the timeouts
 * that cut slow clients, and the HTTP parser's errors in the envelope.
 */
export function fastifyOptions(config: GatewayConfig): FastifyHttpOptions<Server> {
  const headersTimeout = config.HTTP_HEADERS_TIMEOUT_MS;
  const requestTimeout = config.HTTP_REQUEST_TIMEOUT_MS;
  if (requestTimeout > 0 && headersTimeout > requestTimeout) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS', `(${headersTimeout}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${requestTimeout}).`);
  }
  return {
    // Node enforces both timeouts only when it checks its connections: often enough that a timeout means what it says.
    http: { headersTimeout, requestTimeout, connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_INTERVAL_MS, Math.ceil(headersTimeout / 2)) },
    requestTimeout,
    connectionTimeout: config.HTTP_CONNECTION_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    maxRequestsPerSocket: config.HTTP_MAX_REQUESTS_PER_SOCKET,
    clientErrorHandler: answerClientError,
    bodyLimit: BODY_LIMIT_BYTES,
    logger: false,
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // `__proto__` and `constructor` keys stay plain data here (JSON.parse never applies them); the
    // validation pipe refuses them with the field's name, before anything copies the body.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    frameworkErrors: routingError,
  };
}

/**
 * Errors Fastify's router raises before any route or hook runs (a path that is not valid
 * percent-encoding), which would otherwise leave in Fastify's own format without `X-Request-Id`.
 */
function routingError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('X-Request-Id', request.id);
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      sendError(reply, new DomainError(ErrorCode.MalformedRequest, 'The URL path is not valid percent-encoded UTF-8.'));
      return;
    case 'FST_ERR_MAX_PARAM_LENGTH':
      sendError(reply, new DomainError(ErrorCode.RouteNotFound, 'No such route.'));
      return;
    default:
      sendError(reply, new DomainError(ErrorCode.InternalError, 'The gateway failed unexpectedly; retry with backoff.'));
  }
}

/**
 * Errors of Node's HTTP parser and its timeouts, raised before any request exists (so no hook or filter
 * runs): headers over 16 KiB, a malformed request line or header, Content-Length with Transfer-Encoding,
 * headers or a body that do not arrive in time. Answered as every other error, in the envelope with a new
 * `X-Request-Id`, and the connection is closed, as what follows on it cannot be trusted.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // A reset connection is gone; a response already under way cannot be replaced by another.
  const response = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || response?.headersSent === true) {
    socket.destroy();
    return;
  }
  const [status, message] = clientErrorAnswer(error.code);
  const body = JSON.stringify(errorEnvelope(new DomainError(message.code, message.text)));
  socket.end(
    [
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${randomUUID()}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n'),
    // Once the answer is out, the connection goes: whatever the client still sends is not read.
    () => socket.destroy(),
  );
}

/**
 * The status and error of a parser error. Statuses 431 and 408 say what happened to any HTTP client or
 * proxy; the envelope's code is `MalformedRequest`, the code of a request the gateway cannot read.
 */
function clientErrorAnswer(code: string | undefined): [number, { code: ErrorCode; text: string }] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, { code: ErrorCode.MalformedRequest, text: 'The request line and headers are larger than 16 KiB.' }];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, { code: ErrorCode.MalformedRequest, text: 'The request did not arrive in time; the connection is closed.' }];
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return [400, { code: ErrorCode.MalformedRequest, text: 'The request has both Content-Length and Transfer-Encoding.' }];
    default:
      return [400, { code: ErrorCode.MalformedRequest, text: 'The request is not valid HTTP/1.1.' }];
  }
}

/**
 * What Nest does not configure on Fastify: JSON is the only body format, and every response carries
 * `X-Request-Id`. Nest routes Fastify's own errors (parsing, limits, unknown routes) through the
 * exception filters, so `HttpErrorFilter` puts them in the envelope.
 */
export function configureFastify(instance: FastifyInstance, config: GatewayConfig): void {
  // Beyond the cap, Node closes each new connection as soon as it is accepted.
  if (config.HTTP_MAX_CONNECTIONS > 0) instance.server.maxConnections = config.HTTP_MAX_CONNECTIONS;
  instance.removeContentTypeParser('text/plain');
  // Nest passes `@RouteConfig(...)` as the route's config; a route that names a body limit gets it.
  instance.addHook('onRoute', (route) => {
    const limit = (route.config as { bodyLimit?: unknown } | undefined)?.bodyLimit;
    if (typeof limit === 'number') route.bodyLimit = limit;
  });
  // A callback hook: an async one costs every request a promise for a header.
  instance.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    done();
  });
}
