import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { PathItemObject } from '@nestjs/swagger';
import type { FastifyInstance } from 'fastify';
import { sendHtmlPage, serveBuiltFiles } from '../http/web-files.js';

/**
 * The consignee's tracking page at `/track/{token}` and the map files it loads from `/maps/`, all served
 * by the gateway (docs/share-links.md). Offline by construction: the page, MapLibre GL, and a world
 * basemap (Natural Earth, from world-atlas) are files `npm run build` writes to `apps/gateway/dist/web/`
 * (scripts/build-web.mjs); no CDN, no tile server, no font, and a Content-Security-Policy that lets the
 * page load nothing from anywhere else. The page is the same for every token: it reads the token from
 * its own address and asks `GET /v1/public/tracking/{token}`, so serving it costs no lookup.
 */
export const TRACKING_PAGE_PATH = '/track';
/** Where the map's files are served: the page's scripts and styles, MapLibre GL, the basemap. */
export const MAPS_PATH = '/maps/';

/** Built next to the compiled gateway; the same directory whether this runs from `src/` (tests) or `dist/`. */
export const WEB_DIRECTORY = fileURLToPath(new URL('../../dist/web/', import.meta.url));

/**
 * Only this origin: MapLibre's CSP build runs its worker from a file of ours (no `blob:`), its stylesheet
 * draws the controls' icons from `data:` images, and it fetches the basemap and the view with fetch.
 */
export const TRACKING_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self'",
  "manifest-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="robots" content="noindex, nofollow">
  <title>Shipment tracking</title>
  <link rel="icon" type="image/svg+xml" href="${MAPS_PATH}favicon.svg">
  <link rel="stylesheet" href="${MAPS_PATH}maplibre/maplibre-gl.css">
  <link rel="stylesheet" href="${MAPS_PATH}tracking-page.css">
  <script defer src="${MAPS_PATH}maplibre/maplibre-gl-csp.js"></script>
  <script type="module" src="${MAPS_PATH}tracking-page.js"></script>
</head>
<body>
  <main>
    <section id="summary" class="panel" aria-live="polite" hidden>
      <h1 id="name">Shipment</h1>
      <p><span id="status" class="status"></span></p>
      <dl>
        <dt>Estimated arrival</dt><dd id="eta">Not available</dd>
        <dt>From</dt><dd id="origin">Not given</dd>
        <dt>To</dt><dd id="destination">Not given</dd>
        <dt>Last position</dt><dd id="position">None yet</dd>
        <dt>Updated</dt><dd id="updated"></dd>
      </dl>
      <div id="stops" hidden>
        <h2>Stops</h2>
        <ol id="visits"></ol>
      </div>
    </section>
    <div id="map" aria-label="Map of the shipment's route"></div>
    <section id="gone" class="panel" hidden>
      <h1>This link has expired or is unknown</h1>
      <p>Links to a shipment work for a limited time and can be withdrawn. Ask the sender for a new link.</p>
    </section>
    <p id="loading" class="panel">Loading…</p>
  </main>
</body>
</html>
`;

/** The page's entry in the OpenAPI document (its files under /maps/ are not API). */
export const TRACKING_PAGE_PATH_ITEM: PathItemObject = {
  get: {
    tags: ['Share links'],
    operationId: 'trackingPage',
    summary: 'The tracking page a share link opens: a map with the track, origin, destination and position, the status and ETA',
    description:
      'An HTML page, the same for every token, that reads GET /v1/public/tracking/{token} and refreshes it every 30 s; an unknown, ' +
      'expired or revoked link shows "This link has expired or is unknown". Its scripts, styles and basemap are served by the gateway ' +
      'under /maps/; its Content-Security-Policy allows nothing from elsewhere.',
    parameters: [{ name: 'token', in: 'path', required: true, schema: { type: 'string' } }],
    responses: { 200: { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } } },
  },
};

/** Registers `/track/{token}` and the files under `/maps/`; stops the start when `npm run build` has not built them. */
export async function registerTrackingPage(instance: FastifyInstance): Promise<void> {
  if (!existsSync(`${WEB_DIRECTORY}basemap.json`)) {
    throw new Error(`The tracking page's files are missing from ${WEB_DIRECTORY}: run npm run build (scripts/build-web.mjs).`);
  }
  instance.get(`${TRACKING_PAGE_PATH}/:token`, (_request, reply) =>
    sendHtmlPage(reply, PAGE, { csp: TRACKING_PAGE_CSP, cacheControl: 'private, max-age=300' }),
  );
  await serveBuiltFiles(instance, { root: WEB_DIRECTORY, prefix: MAPS_PATH, maxAge: '1h' });
}
