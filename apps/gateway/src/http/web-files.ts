import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * Serves the files `npm run build` wrote to `root` under `prefix` (the web pages' scripts, styles, map
 * files): one route per file found at start-up, so any other path under `prefix` is the usual 404
 * RouteNotFound; the pre-compressed `.gz` copies answer clients that accept them.
 */
export async function serveBuiltFiles(instance: FastifyInstance, options: { root: string; prefix: string; maxAge: string }): Promise<void> {
  await instance.register(fastifyStatic, {
    root: options.root,
    prefix: options.prefix,
    wildcard: false,
    globIgnore: ['**/*.gz'],
    preCompressed: true,
    index: false,
    decorateReply: false,
    maxAge: options.maxAge,
    setHeaders: (reply) => void reply.header('X-Content-Type-Options', 'nosniff'),
  });
}

/**
 * Sends one of the gateway's HTML pages with `csp`, no referrer (the tracking page's address holds its
 * token: no request a page makes may tell anyone where it came from) and no indexing.
 */
export function sendHtmlPage(reply: FastifyReply, page: string, options: { csp: string; cacheControl: string }): FastifyReply {
  return reply
    .header('Content-Type', 'text/html; charset=utf-8')
    .header('Content-Security-Policy', options.csp)
    .header('Referrer-Policy', 'no-referrer')
    .header('Cache-Control', options.cacheControl)
    .header('X-Content-Type-Options', 'nosniff')
    .header('X-Robots-Tag', 'noindex, nofollow')
    .send(page);
}
