import type { Browser, BrowserContext, Page } from 'playwright-core';
import { AlertKind } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAlert } from '../factories/alert.factory.js';
import { assignDevice, createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { launchChromium, recordPage, screenshotPath, type PageRecord } from '../support/browser.js';
import { clockPast } from '../support/clock.js';
import { eventually } from '../support/eventually.js';
import { TestStack } from '../support/stack.js';

/** The browser's storage, as far as the tests read it (the specs compile without the DOM library). */
interface BrowserGlobals {
  sessionStorage: { length: number } & Record<string, string>;
  localStorage: { length: number } & Record<string, string>;
  document: { cookie: string };
  caches: { keys(): Promise<string[]> };
}

/** What the map of the console's current view has drawn, read in the page. */
interface MapState {
  trackFeatures: number;
  areaFeatures: number;
  placeFeatures: number;
  positionFeatures: number;
}

/**
 * The console in Debian's Chromium (playwright-core), used as a person would: sign in with the labelled
 * form, the shipment list, a shipment's map, acknowledging an alert, events arriving without a reload,
 * a Viewer's read-only view, signing out. In every test no request leaves the gateway and the page logs
 * no error.
 */
describe('the console', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let viewer: { applicationId: string; applicationSecret: string };
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  let shipmentId: string;
  let accountId: string;
  let deviceSerial: string;
  const opened: { context: BrowserContext; record: PageRecord }[] = [];

  beforeAll(async () => {
    [stack, { browser, close: closeBrowser }] = await Promise.all([TestStack.start(), launchChromium()]);
    tenant = await createTenant(stack);
    accountId = tenant.accountIds[0]!;
    viewer = await stack.identity.createApplication(tenant.tenantId, 'Console viewer', 'Viewer', '*');
    shipmentId = await shipmentOnItsWay(60);
    // Two more, to make a list: one planned with an arrival time, which gives it an estimate (basis Planned).
    const milan = (await createPointOfInterest(stack, tenant, { body: { name: 'Milan hub', location: { lat: 45.46, lng: 9.19 }, radiusMeters: 2000 } }))
      .pointOfInterest;
    await createShipment(stack, tenant, {
      name: 'Hamburg to Milan',
      body: { destinationId: milan.id, plannedArrivalAt: new Date(Date.now() + 3 * 86400_000).toISOString() },
    });
    await createShipment(stack, tenant, { name: 'Antwerp to Madrid' });
    // Two alerts: one the Admin acknowledges, one still unacknowledged when the Viewer looks.
    await openAlert(stack, tenant, shipmentId, { deviceId: null });
    await openAlert(stack, tenant, shipmentId, { deviceId: null, kind: AlertKind.Shock, threshold: 5, peakValue: 7 });
  });
  afterAll(async () => {
    for (const { context } of opened) await context.close().catch(() => undefined);
    await closeBrowser?.();
    await stack?.stop();
  });

  /** A shipment from Rotterdam towards Antwerp with a device that recorded `count` positions on the way. */
  async function shipmentOnItsWay(count: number): Promise<string> {
    const origin = (await createPointOfInterest(stack, tenant, { body: { name: 'Rotterdam DC', location: { lat: 51.885, lng: 4.42 }, radiusMeters: 1500 } }))
      .pointOfInterest;
    const destination = (await createPointOfInterest(stack, tenant, { body: { name: 'Antwerp dock', location: { lat: 51.26, lng: 4.4 }, radiusMeters: 1500 } }))
      .pointOfInterest;
    const shipment = await createShipment(stack, tenant, { name: 'Cold chain to Antwerp', body: { originId: origin.id, destinationId: destination.id } });
    const { set } = await createSet(stack, tenant, shipment.id);
    const { device } = await createDevice(stack, tenant);
    deviceSerial = device.serialNumber;
    const from = await assignDevice(stack, tenant, set, device.id);
    await clockPast(from + count);
    const readings = Array.from({ length: count }, (_v, i) => ({
      deviceId: device.id,
      recordedAt: new Date(from + 1 + i).toISOString(),
      location: { lat: 51.86 - (i / count) * 0.5, lng: 4.42 + Math.sin(i / 5) * 0.02 },
    }));
    const sent = await stack.request('POST', `/v1/accounts/${accountId}/readings`, { token: tenant.token, body: { readings } });
    expect(sent.status, sent.text).toBe(200);
    expect((await stack.request('POST', `/v1/accounts/${accountId}/shipments/${shipment.id}/start`, { token: tenant.token })).status).toBe(204);
    await eventually(
      () => stack.request('GET', `/v1/accounts/${accountId}/shipments/${shipment.id}`, { token: tenant.token }),
      (answer) => answer.body.lastPosition !== null,
      'the last position',
    );
    return shipment.id;
  }

  /** A fresh browser profile's page (its own storage), recorded. */
  async function newPage(): Promise<{ page: Page; record: PageRecord }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    const record = recordPage(page);
    opened.push({ context, record });
    return { page, record };
  }

  async function signIn(page: Page, applicationId: string, applicationSecret: string): Promise<void> {
    const favicon = faviconLoaded(page);
    const response = await page.goto(`${stack.baseUrl}/console`);
    expect(response?.status()).toBe(200);
    await favicon;
    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
    await page.getByLabel('Tenant ID').fill(tenant.tenantId);
    await page.getByLabel('Application ID').fill(applicationId);
    await page.getByLabel('Application secret').fill(applicationSecret);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  /** Resolves once the page's favicon has loaded (a missing one is an error too). */
  async function faviconLoaded(page: Page): Promise<void> {
    const response = await page.waitForResponse((r) => new URL(r.url()).pathname === '/maps/favicon.svg', { timeout: 30_000 });
    expect(response.status()).toBe(200);
    await response.finished();
  }

  function expectStayedHome(record: PageRecord): void {
    const gateway = new URL(stack.baseUrl);
    expect(record.requests.length).toBeGreaterThan(3);
    expect(record.requests.filter((url) => url.host !== gateway.host).map(String)).toEqual([]);
    expect(record.errors).toEqual([]);
  }

  /** Waits for the map to have loaded with its data drawn, and reads what it shows. */
  async function mapState(page: Page): Promise<MapState> {
    await page.waitForFunction(
      () => {
        const map = (globalThis as unknown as { trackingConsole?: { map?: { loaded(): boolean; getSource(id: string): unknown; queryRenderedFeatures(g: undefined, o: object): unknown[] } } })
          .trackingConsole?.map;
        return map !== undefined && map.loaded() && map.queryRenderedFeatures(undefined, { layers: ['track'] }).length > 0;
      },
      undefined,
      { timeout: 60_000 },
    );
    return page.evaluate((): MapState => {
      const map = (globalThis as unknown as { trackingConsole: { map: { queryRenderedFeatures(g: undefined, o: { layers: string[] }): unknown[] } } }).trackingConsole.map;
      const count = (layer: string) => map.queryRenderedFeatures(undefined, { layers: [layer] }).length;
      return { trackFeatures: count('track'), areaFeatures: count('areas'), placeFeatures: count('places'), positionFeatures: count('position') };
    });
  }

  it('signs in with the labelled form, opens the only account at once, and lists shipments with status, ETA, last position and open alerts', async () => {
    const { page, record } = await newPage();
    await signIn(page, tenant.applicationId, tenant.applicationSecret);
    const row = page.locator(`#shipments tr[data-id="${shipmentId}"]`);
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    expect(cells[0]).toBe('Cold chain to Antwerp');
    expect(cells[1]).toBe('InTransit');
    // No plannedArrivalAt and no evaluation here: no estimate, and the list says so with a dash.
    expect(cells[2]).toBe('—');
    expect(cells[3]).toMatch(/^51\.\d{4}, 4\.\d{4}/);
    expect(cells[4]).toBe('2');
    expect(await page.textContent('#shipment-count')).toBe('Shipments 1–3 of 3');
    const planned = await page.locator('#shipments tbody tr').nth(1).locator('td').allTextContents();
    expect(planned.slice(0, 2)).toEqual(['Hamburg to Milan', 'Planned']);
    expect(planned[2]).toMatch(/\d{4}/);
    expect(await page.textContent('#account-name')).toBe('Account 1');
    expect(await page.textContent('#role')).toBe('Admin');
    // The token is in sessionStorage; the secret is nowhere.
    const stored = await page.evaluate(() => {
      const { sessionStorage, localStorage } = globalThis as unknown as BrowserGlobals;
      return JSON.stringify({ session: { ...sessionStorage }, local: { ...localStorage } });
    });
    expect(stored).toContain('accessToken');
    expect(stored).not.toContain(tenant.applicationSecret);
    expect(await page.inputValue('#application-secret')).toBe('');
    await page.screenshot({ path: screenshotPath('console-shipments') });
    expectStayedHome(record);
  });

  it('opens a shipment with its track, places and position on the map, acknowledges an alert, and shows new events without a reload', async () => {
    const { page, record } = await newPage();
    await signIn(page, tenant.applicationId, tenant.applicationSecret);
    await page.getByRole('link', { name: 'Cold chain to Antwerp' }).click();
    const state = await mapState(page);
    expect(state.trackFeatures).toBeGreaterThan(0);
    // The origin's and destination's circles to scale, their markers, the last position.
    expect(state.areaFeatures).toBe(2);
    expect(state.placeFeatures).toBe(2);
    expect(state.positionFeatures).toBe(1);
    await expect.poll(() => page.textContent('#shipment-name')).toBe('Cold chain to Antwerp');
    expect(await page.textContent('#shipment-facts')).toContain('Antwerp dock');
    expect(await page.locator('#devices tr').allTextContents()).toEqual([expect.stringContaining(deviceSerial)]);

    const buttons = page.locator('#alerts button.acknowledge');
    await expect.poll(() => buttons.count()).toBe(2);
    await page.screenshot({ path: screenshotPath('console-shipment'), fullPage: true });
    await buttons.first().click();
    await expect.poll(() => buttons.count()).toBe(1);
    // Its event comes through the feed the console follows.
    await page.locator('#events li[data-type="alert.acknowledged"]').waitFor({ timeout: 20_000 });

    // A change made elsewhere: its event appears, and the page shows the new name, without a reload.
    const renamed = await stack.request('PATCH', `/v1/accounts/${accountId}/shipments/${shipmentId}`, {
      token: tenant.token,
      body: { name: 'Cold chain to Antwerp, dock 4' },
    });
    expect(renamed.status, renamed.text).toBe(200);
    await page.locator('#events li[data-type="shipment.updated"]').waitFor({ timeout: 20_000 });
    await expect.poll(() => page.textContent('#shipment-name'), { timeout: 20_000 }).toBe('Cold chain to Antwerp, dock 4');
    await page.locator('#events').scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath('console-shipment-events') });

    await page.getByRole('link', { name: 'Devices' }).click();
    await page.locator('#device-rows tr').first().waitFor();
    expect(await page.locator('#device-rows tr').first().textContent()).toContain(deviceSerial);
    // The device at its last location on the devices' map (a point, or a cluster of one page's devices).
    await page.waitForFunction(
      () => {
        const map = (globalThis as unknown as { trackingConsole?: { map?: { loaded(): boolean; getLayer(id: string): unknown; queryRenderedFeatures(g: undefined, o: object): unknown[] } } })
          .trackingConsole?.map;
        return map !== undefined && map.loaded() && map.getLayer('device-points') !== undefined && map.queryRenderedFeatures(undefined, { layers: ['device-points', 'device-clusters'] }).length > 0;
      },
      undefined,
      { timeout: 30_000 },
    );
    await page.screenshot({ path: screenshotPath('console-devices') });
    expectStayedHome(record);
    // Software WebGL and two trips through the event feed (outbox, stream, feed, the page's 2 s poll) on a loaded machine.
  }, 90_000);

  it('shows a Viewer everything read-only: the alerts without an acknowledge button', async () => {
    const { page, record } = await newPage();
    await signIn(page, viewer.applicationId, viewer.applicationSecret);
    await page.locator(`#shipments tr[data-id="${shipmentId}"] a`).click();
    await mapState(page);
    await expect.poll(() => page.locator('#alerts tr').count()).toBe(2);
    expect(await page.locator('#alerts tr').allTextContents()).toEqual([expect.stringContaining('Shock'), expect.stringContaining('TemperatureHigh')]);
    expect(await page.locator('#alerts button').count()).toBe(0);
    expect(await page.textContent('#role')).toBe('Viewer');
    expectStayedHome(record);
  });

  it('is served by the gateway with a CSP that allows nothing from elsewhere, its files under /console/, anything else there a 404', async () => {
    const page = await stack.request('GET', '/console');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    for (const directive of csp.split(';').map((part) => part.trim())) expect(directive, csp).not.toMatch(/https?:|\*|blob:|'unsafe-/);
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    for (const label of ['Tenant ID', 'Application ID', 'Application secret']) expect(page.text).toContain(`>${label}</label>`);
    const script = await stack.request('GET', '/console/app.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript|^application\/javascript/);
    const missing = await stack.request('GET', '/console/nothing-here.js');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('RouteNotFound');
  });

  it('signs out and leaves nothing in the browser’s storage', async () => {
    const { page, record } = await newPage();
    await signIn(page, tenant.applicationId, tenant.applicationSecret);
    await page.locator(`#shipments tr[data-id="${shipmentId}"]`).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    const left = await page.evaluate(async () => {
      const { sessionStorage, localStorage, document, caches } = globalThis as unknown as BrowserGlobals;
      return { session: sessionStorage.length, local: localStorage.length, cookies: document.cookie, caches: await caches.keys() };
    });
    expect(left).toEqual({ session: 0, local: 0, cookies: '', caches: [] });
    // A reload finds no session either.
    const favicon = faviconLoaded(page);
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await favicon;
    expect(await page.isVisible('#nav')).toBe(false);
    await page.screenshot({ path: screenshotPath('console-sign-in') });
    expectStayedHome(record);
  });
});
