import { randomUUID } from 'node:crypto';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { BODY_LIMIT_BYTES } from '../config.js';
import { sendError } from './error.filter.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Longer than any URL Node accepts (16 KiB of request line and headers), so that a long path id
 * reaches its route and gets the resource's own 404 rather than Fastify's bare 414.
 */
const MAX_PARAM_LENGTH = 16 * 1024;

/** Fastify's server options: the body limit, and request ids echoed when sane, else generated. */
export function fastifyOptions(): FastifyServerOptions {
  return {
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
 * What Nest does not configure on Fastify: JSON is the only body format, and every response carries
 * `X-Request-Id`. Nest routes Fastify's own errors (parsing, limits, unknown routes) through the
 * exception filters, so `HttpErrorFilter` puts them in the envelope.
 */
export function configureFastify(instance: FastifyInstance): void {
  instance.removeContentTypeParser('text/plain');
  // Nest passes `@RouteConfig(...)` as the route's config; a route that names a body limit gets it.
  instance.addHook('onRoute', (route) => {
    const limit = (route.config as { bodyLimit?: unknown } | undefined)?.bodyLimit;
    if (typeof limit === 'number') route.bodyLimit = limit;
  });
  instance.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });
}
