import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { BODY_LIMIT_BYTES } from '../config.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

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
  };
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
