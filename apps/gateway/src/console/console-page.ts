import { existsSync } from 'node:fs';
import type { PathItemObject } from '@nestjs/swagger';
import type { FastifyInstance } from 'fastify';
import { sendHtmlPage, serveBuiltFiles } from '../http/web-files.js';
import { MAPS_PATH, TRACKING_PAGE_CSP, WEB_DIRECTORY } from '../share-links/tracking-page.js';

/**
 * The console at `/console` (docs/console.md): a web application for the people who run shipments, built of
 * plain ES modules under `apps/gateway/web/console/` that `npm run build` copies to
 * `apps/gateway/dist/web/console/` (scripts/build-web.mjs) and served here under `/console/`. It is a
 * client of the public API like any other: it signs in with `POST /v1/applications/token` and calls `/v1/`
 * with the token; nothing in the gateway knows it. The map is the tracking page's (`/maps/map-view.js`,
 * MapLibre GL and the basemap under `/maps/`), and so is the Content-Security-Policy: nothing loads from
 * anywhere but the gateway.
 */
export const CONSOLE_PATH = '/console';
/** The console's scripts and stylesheet. */
export const CONSOLE_FILES_PATH = '/console/';

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="robots" content="noindex, nofollow">
  <title>Tracking console</title>
  <link rel="icon" type="image/svg+xml" href="${MAPS_PATH}favicon.svg">
  <link rel="stylesheet" href="${MAPS_PATH}maplibre/maplibre-gl.css">
  <link rel="stylesheet" href="${CONSOLE_FILES_PATH}console.css">
  <script defer src="${MAPS_PATH}maplibre/maplibre-gl-csp.js"></script>
  <script type="module" src="${CONSOLE_FILES_PATH}app.js"></script>
</head>
<body>
  <header id="top">
    <a class="brand" href="#/">Tracking console</a>
    <nav id="nav" aria-label="Sections" hidden>
      <span id="account-name"></span>
      <a id="nav-shipments" href="#/">Shipments</a>
      <a id="nav-devices" href="#/">Devices</a>
      <a id="nav-accounts" href="#/accounts">Accounts</a>
      <span id="role" class="badge"></span>
      <button id="sign-out" type="button">Sign out</button>
    </nav>
  </header>
  <p id="message" class="message" role="alert" hidden></p>
  <main id="view">
    <form id="sign-in" class="card" hidden>
      <h1>Sign in</h1>
      <p>With the credentials of an application: <code>npm start</code> and <code>admin application create</code> print them.</p>
      <label for="tenant-id">Tenant ID</label>
      <input id="tenant-id" name="tenantId" autocomplete="username" required spellcheck="false">
      <label for="application-id">Application ID</label>
      <input id="application-id" name="applicationId" required spellcheck="false">
      <label for="application-secret">Application secret</label>
      <input id="application-secret" name="applicationSecret" type="password" autocomplete="current-password" required>
      <button type="submit">Sign in</button>
    </form>
    <noscript>The console needs JavaScript.</noscript>
  </main>
</body>
</html>
`;

/** The page's entry in the OpenAPI document (its files under /console/ are not API). */
export const CONSOLE_PATH_ITEM: PathItemObject = {
  get: {
    tags: ['Console'],
    operationId: 'consolePage',
    summary: 'The console: a web application for the people who run shipments, a client of this API',
    description:
      'An HTML page that signs in with application credentials (POST /v1/applications/token, the token kept in sessionStorage only) and ' +
      'shows the accounts, shipments with their map, alerts, events and devices through the routes of this document. Its scripts and ' +
      'styles are served by the gateway under /console/ and /maps/; its Content-Security-Policy allows nothing from elsewhere.',
    responses: { 200: { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } } },
  },
};

/** Registers `/console` and the files under `/console/`; stops the start when `npm run build` has not built them. */
export async function registerConsolePage(instance: FastifyInstance): Promise<void> {
  const root = `${WEB_DIRECTORY}console/`;
  if (!existsSync(`${root}app.js`)) {
    throw new Error(`The console's files are missing from ${root}: run npm run build (scripts/build-web.mjs).`);
  }
  instance.get(CONSOLE_PATH, (_request, reply) => sendHtmlPage(reply, PAGE, { csp: TRACKING_PAGE_CSP, cacheControl: 'no-cache' }));
  // Short: a new release's console reaches people who keep the tab open within minutes.
  await serveBuiltFiles(instance, { root, prefix: CONSOLE_FILES_PATH, maxAge: '5m' });
}
