import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assignDevice, createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShareLink } from '../factories/share-link.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { launchChromium, recordPage, screenshotPath, type PageRecord } from '../support/browser.js';
import { clockPast } from '../support/clock.js';
import { eventually } from '../support/eventually.js';
import { TestStack } from '../support/stack.js';

interface PageState {
  loaded: boolean;
  trackFeatures: number;
  placeFeatures: number;
  positionFeatures: number;
  colours: number;
}

/**
 * The consignee's tracking page in Debian's Chromium (playwright-core): it draws the shipment on a map
 * from files the gateway serves, and nothing it loads comes from anywhere else.
 */
describe('the tracking page of a share link', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;

  beforeAll(async () => {
    [stack, { browser, close: closeBrowser }] = await Promise.all([TestStack.start(), launchChromium()]);
    tenant = await createTenant(stack);
  });
  afterAll(async () => {
    await closeBrowser?.();
    await stack?.stop();
  });

  /** A shipment from Rotterdam towards Antwerp with a device that recorded `count` positions on the way. */
  async function shipmentOnItsWay(count: number): Promise<string> {
    const origin = (await createPointOfInterest(stack, tenant, { body: { name: 'Rotterdam DC', location: { lat: 51.885, lng: 4.42 } } })).pointOfInterest;
    const destination = (await createPointOfInterest(stack, tenant, { body: { name: 'Antwerp dock', location: { lat: 51.26, lng: 4.4 } } })).pointOfInterest;
    const shipment = await createShipment(stack, tenant, { name: 'Cold chain to Antwerp', body: { originId: origin.id, destinationId: destination.id } });
    const { set } = await createSet(stack, tenant, shipment.id);
    const { device } = await createDevice(stack, tenant);
    const from = await assignDevice(stack, tenant, set, device.id);
    await clockPast(from + count);
    const readings = Array.from({ length: count }, (_v, i) => ({
      deviceId: device.id,
      recordedAt: new Date(from + 1 + i).toISOString(),
      location: { lat: 51.885 - (i / count) * 0.4, lng: 4.42 + Math.sin(i / 5) * 0.02 },
    }));
    const sent = await stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/readings`, { token: tenant.token, body: { readings } });
    expect(sent.status, sent.text).toBe(200);
    expect((await stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments/${shipment.id}/start`, { token: tenant.token })).status).toBe(204);
    return shipment.id;
  }

  function expectStayedHome(record: PageRecord): void {
    const gateway = new URL(stack.baseUrl);
    expect(record.requests.length).toBeGreaterThan(3);
    expect(record.requests.filter((url) => url.host !== gateway.host).map(String)).toEqual([]);
    expect(record.errors).toEqual([]);
  }

  it('draws the track, places and position on the map, shows status and ETA, and loads nothing from elsewhere', async () => {
    const shipmentId = await shipmentOnItsWay(60);
    const link = await createShareLink(stack, tenant, shipmentId);
    // The last position reaches the shipment through the readings stream: wait for it, as a consignee would not notice.
    await eventually(
      () => stack.request('GET', `/v1/public/tracking/${link.token}`),
      (answer) => answer.body.lastPosition !== null,
      'the last position',
    );
    const page = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 });
    const record = recordPage(page);
    const started = performance.now();
    const response = await page.goto(`${stack.baseUrl}/track/${link.token}`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
    expect(response?.headers()['referrer-policy']).toBe('no-referrer');

    await page.waitForFunction(() => {
      const map = (globalThis as unknown as { trackingPage?: { map?: { loaded(): boolean; areTilesLoaded(): boolean } } }).trackingPage?.map;
      return map !== undefined && map.loaded() && map.areTilesLoaded();
    }, undefined, { timeout: 60_000 });
    const firstPaintMs = performance.now() - started;

    const state = await page.evaluate(async (): Promise<PageState> => {
      // The browser's types, as far as this reads them (the specs compile without the DOM library).
      interface GlLike {
        RGBA: number;
        UNSIGNED_BYTE: number;
        readPixels(x: number, y: number, width: number, height: number, format: number, type: number, pixels: Uint8Array): void;
      }
      interface MapLike {
        once(event: string, listener: () => void): void;
        triggerRepaint(): void;
        getCanvas(): { width: number; height: number; getContext(kind: string): GlLike | null };
        loaded(): boolean;
        queryRenderedFeatures(geometry: undefined, options: { layers: string[] }): unknown[];
      }
      const map = (globalThis as unknown as { trackingPage: { map: MapLike } }).trackingPage.map;
      // Read the frame's pixels while it is still in the drawing buffer: in the render event, right after drawing.
      const colours = await new Promise<number>((resolve) => {
        map.once('render', () => {
          const gl = map.getCanvas().getContext('webgl2') ?? map.getCanvas().getContext('webgl');
          if (gl === null) return resolve(0);
          const { width, height } = map.getCanvas();
          const pixels = new Uint8Array(width * height * 4);
          gl.readPixels(0, 0, width, height, gl.RGBA, gl.UNSIGNED_BYTE, pixels);
          const seen = new Set<number>();
          for (let i = 0; i < pixels.length; i += 4 * 97) seen.add((pixels[i]! << 16) | (pixels[i + 1]! << 8) | pixels[i + 2]!);
          resolve(seen.size);
        });
        map.triggerRepaint();
      });
      const count = (layer: string) => map.queryRenderedFeatures(undefined, { layers: [layer] }).length;
      return { loaded: map.loaded(), trackFeatures: count('track'), placeFeatures: count('places'), positionFeatures: count('position'), colours };
    });
    expect(state.loaded).toBe(true);
    expect(state.trackFeatures).toBeGreaterThan(0);
    expect(state.placeFeatures).toBe(2);
    expect(state.positionFeatures).toBe(1);
    // Water, land, the track's blue, the places' green and red, white outlines: far from a blank canvas.
    expect(state.colours).toBeGreaterThan(5);

    await expect.poll(() => page.textContent('#status')).toBe('On its way');
    expect(await page.textContent('#name')).toBe('Cold chain to Antwerp');
    expect(await page.textContent('#origin')).toBe('Rotterdam DC');
    expect(await page.textContent('#destination')).toBe('Antwerp dock');
    // No estimate yet (no plannedArrivalAt, no evaluation here): the page says so rather than inventing one.
    expect(await page.textContent('#eta')).toBe('Not available');
    expect(await page.textContent('#position')).toMatch(/^51\.\d{4}, 4\.\d{4} at /);

    const path = screenshotPath('tracking-page');
    await page.screenshot({ path, fullPage: true });
    console.info(`tracking page: first map paint ${Math.round(firstPaintMs)} ms; screenshot ${path}`);
    expectStayedHome(record);
    await page.close();
  });

  it('says clearly that an expired or unknown link is gone, with no map and no error', async () => {
    const shipment = await createShipment(stack, tenant, { name: 'Gone soon' });
    const link = await createShareLink(stack, tenant, shipment.id);
    expect((await stack.request('DELETE', `/v1/accounts/${tenant.accountIds[0]}/shipments/${shipment.id}/share-links/${link.id}`, { token: tenant.token })).status).toBe(204);
    for (const token of [link.token, 'AAAAAAAAAAAAAAAAAAAAAA']) {
      const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
      const record = recordPage(page);
      // The API's 404 is what the page expects; the browser logs any failed fetch, so count it apart.
      record.errors.length = 0;
      await page.goto(`${stack.baseUrl}/track/${token}`);
      await page.waitForSelector('#gone:not([hidden])');
      expect(await page.textContent('#gone h1')).toBe('This link has expired or is unknown');
      expect(await page.isVisible('#map')).toBe(false);
      expect(await page.title()).toBe('Link expired or unknown');
      if (token === link.token) await page.screenshot({ path: screenshotPath('tracking-page-expired') });
      const gateway = new URL(stack.baseUrl);
      expect(record.requests.filter((url) => url.host !== gateway.host).map(String)).toEqual([]);
      // The one error Chromium logs by itself: the console line of the view's 404, which the page handles.
      expect(record.errors.filter((error) => !/status of 404/.test(error))).toEqual([]);
      await page.close();
    }
  });
});
