import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page, type Request } from 'playwright-core';

/** Debian's Chromium; `.ci/run` installs it when missing (`apt-get install -y chromium`). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Git-ignored: where browser tests leave their screenshots. */
export const SCREENSHOTS = join(process.cwd(), '.local/screenshots');

/**
 * Headless Chromium with WebGL on SwiftShader (software: no GPU on CI machines) and nothing that
 * reaches out on its own (component updates, sync, safe browsing). playwright-core gives every launch a
 * fresh profile in a temporary directory (it refuses a `--user-data-dir` of ours) and removes it on close.
 */
export async function launchChromium(): Promise<{ browser: Browser; close: () => Promise<void> }> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (as root: apt-get install -y chromium), or set CHROMIUM_PATH`);
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--use-angle=swiftshader',
      '--enable-unsafe-swiftshader',
      '--ignore-gpu-blocklist',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-default-apps',
      '--disable-domain-reliability',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-quic',
      '--metrics-recording-only',
    ],
  });
  return {
    browser,
    close: () => browser.close(),
  };
}

/** What a page did that a test checks at the end: every request it made and every error it logged. */
export interface PageRecord {
  requests: URL[];
  errors: string[];
}

/** Records `page`'s requests, console errors, uncaught exceptions and failed requests. */
export function recordPage(page: Page): PageRecord {
  const record: PageRecord = { requests: [], errors: [] };
  page.on('request', (request: Request) => record.requests.push(new URL(request.url())));
  page.on('console', (message) => {
    if (message.type() === 'error') record.errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => record.errors.push(`page: ${error.message}`));
  page.on('requestfailed', (request) => record.errors.push(`request failed: ${request.url()} ${request.failure()?.errorText ?? ''}`));
  return record;
}

/** A path for a screenshot named `name`, its directory created. */
export function screenshotPath(name: string): string {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return join(SCREENSHOTS, `${name}.png`);
}
