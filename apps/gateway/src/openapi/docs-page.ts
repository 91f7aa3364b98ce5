import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { PathItemObject } from '@nestjs/swagger';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { OPENAPI_DOCUMENT_PATH } from './openapi.controller.js';

/**
 * The interactive reference at `/docs`: Swagger UI from the installed swagger-ui-dist, served by the
 * gateway itself (no CDN: neither the gateway nor its clients may reach the internet). Only the files the
 * page loads are routes, so any other path under `/docs/` stays the usual 404 `RouteNotFound`.
 */
export const DOCS_PATH = '/docs';

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};
const INIT_SCRIPT = 'swagger-ui-init.js';

/** The page's styles, scripts and icon: served for the page, not part of the API, so not in the document. */
export const DOCS_ASSET_PATHS: readonly string[] = [...Object.keys(ASSETS), INIT_SCRIPT].map((file) => `${DOCS_PATH}/${file}`);

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Tracking API reference</title>
  <link rel="stylesheet" href="${DOCS_PATH}/swagger-ui.css">
  <link rel="icon" type="image/png" href="${DOCS_PATH}/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${DOCS_PATH}/swagger-ui-bundle.js"></script>
  <script src="${DOCS_PATH}/${INIT_SCRIPT}"></script>
</body>
</html>
`;

// validatorUrl null: Swagger UI would otherwise send the document to swagger.io's online validator.
const INIT = `window.ui = SwaggerUIBundle(${JSON.stringify({
  url: OPENAPI_DOCUMENT_PATH,
  dom_id: '#swagger-ui',
  deepLinking: true,
  displayOperationId: true,
  displayRequestDuration: true,
  validatorUrl: null,
})});
`;

const PAGE_CACHE = 'public, max-age=300';
const ASSET_CACHE = 'public, max-age=86400';

/** The page's entry in the OpenAPI document (the assets are not API). */
export const DOCS_PATH_ITEM: PathItemObject = {
  get: {
    tags: ['Documentation'],
    operationId: 'docsPage',
    summary: 'The interactive API reference (Swagger UI) of this document',
    description: 'An HTML page; its scripts and styles are served by the gateway under /docs/, and it reads /v1/openapi.json.',
    responses: {
      200: { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } },
    },
  },
};

/**
 * Registers `/docs` and the files it loads. Each file is read on its first request and then kept: read at
 * start-up they held 1.7 MB in every gateway, most of which never serves the page.
 */
export function registerDocsPage(instance: FastifyInstance): void {
  // Resolved now, so that a gateway without swagger-ui-dist fails at start-up rather than on the first visit.
  const directory = swaggerUiDirectory();
  // The page may not be framed by another site (clickjacking).
  instance.get(DOCS_PATH, (_request, reply) =>
    send(reply.header('Content-Security-Policy', "frame-ancestors 'none'"), 'text/html; charset=utf-8', PAGE_CACHE, PAGE),
  );
  instance.get(`${DOCS_PATH}/${INIT_SCRIPT}`, (_request, reply) => send(reply, 'text/javascript; charset=utf-8', PAGE_CACHE, INIT));
  for (const [file, type] of Object.entries(ASSETS)) {
    let body: Promise<Buffer> | undefined;
    instance.get(`${DOCS_PATH}/${file}`, async (_request, reply) => {
      // A failed read is not kept: the next request tries again.
      body ??= readFile(join(directory, file)).catch((error: unknown) => {
        body = undefined;
        throw error;
      });
      return send(reply, type, ASSET_CACHE, await body);
    });
  }
}

function send(reply: FastifyReply, type: string, cacheControl: string, body: string | Buffer): FastifyReply {
  return reply.header('Content-Type', type).header('Cache-Control', cacheControl).header('X-Content-Type-Options', 'nosniff').send(body);
}

/** swagger-ui-dist, as installed for @nestjs/swagger (whose dependency guarantees it is there). */
function swaggerUiDirectory(): string {
  const swagger = createRequire(import.meta.url).resolve('@nestjs/swagger');
  return dirname(createRequire(swagger).resolve('swagger-ui-dist/package.json'));
}
