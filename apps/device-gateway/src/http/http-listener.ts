import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { ERROR_STATUS, ErrorCode, type ErrorDetails, isErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { echo, readingsOf } from '@tracking/readings';
import type { DeviceIdentity, SubmitResult } from '../ingest/device-sink.js';
import { MAX_READINGS_PER_SUBMIT } from '../ingest/dms-sink.js';
import type { DeviceListener, ListenerContext } from '../listeners.js';
import { type DeviceReport, type FieldNames, OSMAND_FIELDS, osmandReport, TRACCAR_FIELDS, trackerField, traccarReport } from './osmand.js';

/** `POST /v1/readings` bodies: 1000 readings of our JSON fit easily. */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;
/** An OsmAnd form or a Traccar Client body is one position. */
export const MAX_REPORT_BODY_BYTES = 64 * 1024;
const SECRET_PATH = /^\/t\/([^/]+)\/?$/;

/**
 * The HTTP listener (docs/protocols/http.md): our JSON (`POST /v1/readings`), the OsmAnd protocol
 * (`GET`/`POST` on `/` or `/t/{secret}/`, query string or form) and Traccar Client's JSON (`POST` with
 * `Content-Type: application/json` on the same paths). Node's own HTTP server rather than a framework:
 * four routes, and full control of what is refused before authentication (connection cap, body size,
 * request deadline, failed attempts per address) and of what is logged (a `/t/{secret}/` path never whole).
 */
export function httpListener(context: ListenerContext): DeviceListener {
  const { config, metrics, connections, logger } = context;
  /** Requests not yet answered: `close` lets them finish (their submits resolved by the sink's drain). */
  let active = 0;
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    active += 1;
    response.once('close', () => (active -= 1));
    handle(context, request, response).catch((error: unknown) => {
      const id = randomUUID();
      logger.error({ err: error, errorId: id, path: redactedPath(request.url) }, 'device HTTP request failed');
      send(response, 500, envelope(ErrorCode.InternalError, 'The device gateway failed unexpectedly; retry.', undefined, id));
    });
  };
  // Node checks request deadlines every `connectionsCheckingInterval` (30 s by default): often enough here.
  const checking = { connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(config.DEVICE_AUTH_TIMEOUT_MS / 4))) };
  const server: Server = context.tls
    ? createHttpsServer({ ...checking, cert: context.tls.cert, key: context.tls.key }, handler)
    : createHttpServer(checking, handler);
  // A request (headers and body) must arrive whole within the authentication deadline.
  server.requestTimeout = config.DEVICE_AUTH_TIMEOUT_MS;
  server.headersTimeout = Math.min(config.DEVICE_AUTH_TIMEOUT_MS, 60_000);
  server.keepAliveTimeout = Math.min(30_000, config.DEVICE_AUTH_TIMEOUT_MS);
  const sockets = new Set<Socket>();
  server.on(context.tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    if (!connections.tryAcquire()) {
      metrics.refusals.inc({ protocol: 'Http', reason: 'connection-limit' });
      socket.destroy();
      return;
    }
    sockets.add(socket);
    metrics.connected('Http');
    // A connection that sends no request at all is closed at the authentication deadline too; each
    // request lifts it (its own deadline is `requestTimeout`), and an idle keep-alive ends at `keepAliveTimeout`.
    socket.setTimeout(config.DEVICE_AUTH_TIMEOUT_MS, () => {
      metrics.authFailures.inc({ protocol: 'Http', reason: 'timeout' });
      socket.destroy();
    });
    socket.once('close', () => {
      sockets.delete(socket);
      connections.release();
      metrics.disconnected('Http');
    });
  });
  return {
    name: 'http',
    async start() {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.DEVICE_HTTP_PORT, config.DEVICE_HOST, () => {
          server.off('error', reject);
          resolve();
        });
      });
      const { port } = server.address() as AddressInfo;
      return [`${context.tls ? 'https' : 'http'}://${config.DEVICE_HOST}:${port}`];
    },
    async stopAccepting() {
      server.close();
      // Idle keep-alive connections would hold the close; busy ones finish their request first.
      server.closeIdleConnections();
    },
    async close() {
      // The sink has answered every submit by now; give their responses a moment to be written.
      const deadline = Date.now() + 5000;
      while (active > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      for (const socket of sockets) socket.destroy();
    },
  };
}

async function handle(context: ListenerContext, request: IncomingMessage, response: ServerResponse): Promise<void> {
  request.socket.setTimeout(0);
  const url = new URL(request.url ?? '/', 'http://device');
  const method = request.method ?? 'GET';
  const pathSecret = SECRET_PATH.exec(url.pathname)?.[1];
  const ourJson = url.pathname === '/v1/readings';
  const trackerPath = url.pathname === '/' || pathSecret !== undefined;
  if (!(ourJson && method === 'POST') && !(trackerPath && (method === 'GET' || method === 'POST'))) {
    request.resume();
    return send(response, 404, envelope(ErrorCode.RouteNotFound, 'No such route on the device gateway.'));
  }
  const contentType = ((request.headers['content-type'] ?? '').split(';', 1)[0] ?? '').trim().toLowerCase();
  const json = contentType === 'application/json';
  if (ourJson && !json) {
    request.resume();
    return send(response, 415, envelope(ErrorCode.UnsupportedMediaType, 'POST /v1/readings takes Content-Type: application/json.'));
  }
  const limit = ourJson ? MAX_JSON_BODY_BYTES : MAX_REPORT_BODY_BYTES;
  const body = method === 'POST' ? await readBody(request, limit) : Buffer.alloc(0);
  if (body === null) {
    context.metrics.refusals.inc({ protocol: 'Http', reason: 'body-too-large' });
    response.setHeader('Connection', 'close');
    return send(response, 413, envelope(ErrorCode.PayloadTooLarge, `The request body is larger than ${limit} bytes.`));
  }

  const identity = await authenticated(context, request, response, pathSecret ?? bearer(request));
  if (!identity) return;
  try {
    if (ourJson) {
      const list = readingsOf(parseJson(body), MAX_READINGS_PER_SUBMIT);
      const result = await context.sink.submit(identity, list);
      if (answerUncommitted(context, identity, result, response)) return;
      if (result.kind === 'committed') send(response, 200, result.outcome);
      return;
    }
    const report = json ? traccarReport(parseJson(body)) : osmandReport(formParams(url, body, contentType));
    return await submitReport(context, identity, report, json ? TRACCAR_FIELDS : OSMAND_FIELDS, response);
  } catch (error) {
    if (error instanceof DomainError && error.code !== ErrorCode.InternalError) {
      return send(response, ERROR_STATUS[error.code], envelope(error.code, error.message, error.details));
    }
    throw error;
  }
}

/** OsmAnd or Traccar Client: one reading; 403 when `id` is not the credential's identifier; 200 with an empty body once committed. */
async function submitReport(context: ListenerContext, identity: DeviceIdentity, report: DeviceReport, names: FieldNames, response: ServerResponse): Promise<void> {
  if (report.id !== identity.identifier) {
    return send(response, 403, envelope(ErrorCode.Forbidden, 'The id is not the identifier of this credential.'));
  }
  const result = await context.sink.submit(identity, [report.reading]);
  if (answerUncommitted(context, identity, result, response) || result.kind !== 'committed') return;
  const refused = result.outcome.rejected[0];
  if (!refused) {
    response.writeHead(200, { 'Content-Length': 0 });
    response.end();
    return;
  }
  const { code, message, details } = refused.error;
  const field = typeof details?.field === 'string' ? trackerField(details.field, names) : undefined;
  const status = isErrorCode(code) ? ERROR_STATUS[code] : 400;
  send(response, status, envelope(code, field === undefined ? message : messageFor(field, details?.issue), field === undefined ? details : { ...details, field }));
}

/** Answers what is not a commit: 429 (limits), 401 (revoked), 503 (unknown outcome). True when it answered. */
function answerUncommitted(context: ListenerContext, identity: DeviceIdentity, result: SubmitResult, response: ServerResponse): boolean {
  switch (result.kind) {
    case 'committed':
      return false;
    case 'limited':
      response.setHeader('Retry-After', String(result.retryAfterSeconds));
      send(response, 429, envelope(ErrorCode.RateLimitExceeded, 'Too many readings; nothing was stored. Retry after the Retry-After delay.'));
      return true;
    case 'revoked':
      context.metrics.authFailures.inc({ protocol: identity.protocol, reason: 'revoked' });
      send(response, 401, envelope(ErrorCode.Unauthorized, 'The credential is not valid.'));
      return true;
    case 'unavailable':
      response.setHeader('Retry-After', '1');
      send(response, 503, envelope(ErrorCode.ServiceUnavailable, 'The readings could not be stored now; nothing is acknowledged. Retry.'));
      return true;
  }
}

/**
 * The credential behind `secret`, or null once it answered: 429 for an address over its failed
 * attempts, 401 for a missing or wrong secret (counted against the address), 503 when the DMS cannot answer.
 */
async function authenticated(
  context: ListenerContext,
  request: IncomingMessage,
  response: ServerResponse,
  secret: string | undefined,
): Promise<DeviceIdentity | null> {
  const address = request.socket.remoteAddress ?? 'unknown';
  if (!context.failedAuth.allows(address)) {
    context.metrics.authFailures.inc({ protocol: 'Http', reason: 'address-limit' });
    response.setHeader('Retry-After', '60');
    send(response, 429, envelope(ErrorCode.RateLimitExceeded, 'Too many failed authentications from this address; retry later.', { policy: 'device-authentication' }));
    return null;
  }
  let identity: DeviceIdentity | null = null;
  if (secret !== undefined && secret !== '') {
    try {
      identity = await context.authenticator.authenticate('Http', '', decodeSecret(secret));
    } catch (error) {
      const code = error instanceof DomainError ? error.code : ErrorCode.ServiceUnavailable;
      response.setHeader('Retry-After', '1');
      send(response, code === ErrorCode.GatewayTimeout ? 504 : 503, envelope(code === ErrorCode.GatewayTimeout ? code : ErrorCode.ServiceUnavailable, 'Authentication is not available now; retry.'));
      return null;
    }
  }
  if (!identity) {
    context.failedAuth.take(address);
    context.metrics.authFailures.inc({ protocol: 'Http', reason: 'credentials' });
    send(response, 401, envelope(ErrorCode.Unauthorized, 'A valid device secret is required (Authorization: Bearer, or a /t/{secret}/ URL).'));
    return null;
  }
  return identity;
}

function bearer(request: IncomingMessage): string | undefined {
  const header = request.headers.authorization;
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

function decodeSecret(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The body, or null once it outgrew `limit` (the rest is not read). */
function readBody(request: IncomingMessage, limit: number): Promise<Buffer | null> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > limit) {
    request.resume();
    return Promise.resolve(null);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        request.removeAllListeners('data');
        request.resume();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    });
    request.once('end', () => resolve(size > limit ? null : Buffer.concat(chunks)));
    request.once('error', reject);
  });
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new DomainError(ErrorCode.MalformedRequest, 'The request body is not valid JSON.');
  }
}

/** OsmAnd's parameters: the query string, with a form body's over it. */
function formParams(url: URL, body: Buffer, contentType: string): URLSearchParams {
  const params = new URLSearchParams(url.search);
  if (body.length > 0 && (contentType === 'application/x-www-form-urlencoded' || contentType === '')) {
    for (const [name, value] of new URLSearchParams(body.toString('utf8'))) params.set(name, value);
  }
  return params;
}

function messageFor(field: string, issue: unknown): string {
  switch (issue) {
    case ParameterIssue.Required:
      return `${field} is required.`;
    case ParameterIssue.OutOfRange:
      return `${field} is out of range.`;
    case ParameterIssue.ConflictingReading:
      return `${field}: a reading of this device at this time with other values is stored; a reading cannot change.`;
    default:
      return `${field} is not valid.`;
  }
}

function envelope(code: ErrorCode | string, message: string, details?: ErrorDetails, id: string = randomUUID()): { error: Record<string, unknown> } {
  const error: Record<string, unknown> = { id, code, message };
  if (code === ErrorCode.Unauthorized) return { error: { code, message } };
  if (details !== undefined) error.details = typeof details.field === 'string' ? { ...details, field: echo(details.field) } : details;
  return { error };
}

function send(response: ServerResponse, status: number, body: unknown): void {
  if (response.headersSent) return;
  const text = JSON.stringify(body);
  response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  response.end(text);
}

/** A path fit for a log line: a `/t/{secret}/` path keeps only the secret's first characters. */
export function redactedPath(url: string | undefined): string {
  const path = (url ?? '/').split('?', 1)[0] ?? '/';
  return path.replace(/^\/t\/([^/]{0,8})[^/]*/, '/t/$1…');
}
