import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { registerConsolePage } from '../console/console-page.js';
import { registerTrackingPage } from '../share-links/tracking-page.js';
import { registerDocsPage } from './docs-page.js';
import { PublishedOpenApi } from './openapi.controller.js';

/**
 * Loads the OpenAPI document the build wrote, for `GET /v1/openapi.json` to serve, and adds the interactive
 * reference at `/docs`, the share links' tracking page at `/track/{token}` and the console at `/console`. Call after the app is created and before it listens.
 */
export async function setupOpenApi(app: NestFastifyApplication): Promise<void> {
  await app.get(PublishedOpenApi).load();
  registerDocsPage(app.getHttpAdapter().getInstance());
  await registerTrackingPage(app.getHttpAdapter().getInstance());
  await registerConsolePage(app.getHttpAdapter().getInstance());
}
