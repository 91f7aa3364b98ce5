import { randomBytes, randomUUID } from 'node:crypto';
import type { Shipment } from '@tracking/contracts';
import { TrackingApiError, TrackingClient } from '@tracking/sdk';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assignDevice, createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShareLink } from '../factories/share-link.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { clockPast } from '../support/clock.js';
import { eventually } from '../support/eventually.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS, UUID_V7 } from '../support/http-assertions.js';
import { connectOms } from '../support/oms-database.js';
import { describePaging } from '../support/paging-behaviour.js';
import { type HttpResult, TestStack } from '../support/stack.js';

const PUBLIC_BASE_URL = 'https://track.example.com';
const VIEW_FIELDS = ['name', 'status', 'origin', 'destination', 'lastPosition', 'eta', 'track', 'visits', 'updatedAt'].sort();
const LINK_FIELDS = ['id', 'expiresAt', 'createdAt', 'revokedAt'].sort();
const DAY_MS = 24 * 3600 * 1000;

describe('share links and the public tracking view', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let viewer: TestTenant;
  let other: TestTenant;
  let oms: pg.Client;
  let base: string;

  beforeAll(async () => {
    stack = await TestStack.start({ env: { PUBLIC_BASE_URL: `${PUBLIC_BASE_URL}/` } });
    tenant = await createTenant(stack, { accounts: 2 });
    other = await createTenant(stack);
    base = `/v1/accounts/${tenant.accountIds[0]}`;
    oms = await connectOms(stack);
    const credentials = await stack.identity.createApplication(tenant.tenantId, 'Viewer', 'Viewer', '*');
    const token = (await stack.request('POST', '/v1/applications/token', { body: { tenantId: tenant.tenantId, ...credentials } })).body.accessToken as string;
    viewer = { ...tenant, ...credentials, token };
  });
  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
  });

  const linksOf = (shipmentId: string, at = base) => `${at}/shipments/${shipmentId}/share-links`;
  const view = (token: string, headers: Record<string, string> = {}): Promise<HttpResult> => stack.request('GET', `/v1/public/tracking/${token}`, { headers });

  /** A shipment with an origin, a destination, a device assigned, and positions recorded 1 ms apart from its assignment on. */
  async function trackedShipment(positions: number): Promise<{ shipment: Shipment; deviceId: string; times: number[] }> {
    const origin = (await createPointOfInterest(stack, tenant, { body: { name: 'Origin DC', location: { lat: 51.9, lng: 4.4 } } })).pointOfInterest;
    const destination = (await createPointOfInterest(stack, tenant, { body: { name: 'Customer dock', location: { lat: 51.2, lng: 4.4 } } })).pointOfInterest;
    const shipment = await createShipment(stack, tenant, { name: 'Pallets for Antwerp', body: { originId: origin.id, destinationId: destination.id, metadata: { secret: 'internal' } } });
    const { set } = await createSet(stack, tenant, shipment.id);
    const { device } = await createDevice(stack, tenant);
    const assignedAt = await assignDevice(stack, tenant, set, device.id);
    const times = Array.from({ length: positions }, (_v, i) => assignedAt + 1 + i);
    await clockPast(times.at(-1)!);
    const readings = times.map((t, i) => ({ deviceId: device.id, recordedAt: new Date(t).toISOString(), location: { lat: 51.9 - i * 0.0005, lng: 4.4 + (i % 7) * 0.0003 } }));
    for (let i = 0; i < readings.length; i += 5000) {
      const sent = await stack.request('POST', `${base}/readings`, { token: tenant.token, body: { readings: readings.slice(i, i + 5000) } });
      expect(sent.status, sent.text).toBe(200);
    }
    return { shipment, deviceId: device.id, times };
  }

  describe('POST /shipments/{id}/share-links', () => {
    it('answers 201 with the url shown once, no-store, a Location, and a 7-day default expiry', async () => {
      const shipment = await createShipment(stack, tenant);
      const before = Date.now();
      const response = await stack.request('POST', linksOf(shipment.id), { token: tenant.token, body: {} });
      expect(response.status, response.text).toBe(201);
      expect(Object.keys(response.body).sort()).toEqual([...LINK_FIELDS, 'url'].sort());
      expect(response.body.id).toMatch(UUID_V7);
      expect(response.body.url).toMatch(/^https:\/\/track\.example\.com\/track\/[A-Za-z0-9_-]{22}$/);
      expect(response.body.createdAt).toMatch(TIMESTAMP_MS);
      expect(response.body.revokedAt).toBeNull();
      const ttl = Date.parse(response.body.expiresAt) - before;
      expect(ttl).toBeGreaterThanOrEqual(7 * DAY_MS);
      expect(ttl).toBeLessThan(7 * DAY_MS + 60_000);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('location')).toBe(`${linksOf(shipment.id)}/${response.body.id}`);
      // Only a digest is stored: the token appears nowhere in the OMS database.
      const token = new URL(response.body.url).pathname.split('/').pop()!;
      const stored = await oms.query('SELECT * FROM share_links WHERE id = $1', [response.body.id]);
      expect(JSON.stringify(stored.rows)).not.toContain(token);
      expect((stored.rows[0].token_digest as Buffer).length).toBe(32);
      // Each link has its own token.
      const again = await createShareLink(stack, tenant, shipment.id);
      expect(again.token).not.toBe(token);
    });

    it('takes no body at all as the default, and an expiresAt up to 30 days ahead', async () => {
      const shipment = await createShipment(stack, tenant);
      const bare = await stack.request('POST', linksOf(shipment.id), { token: tenant.token });
      expect(bare.status, bare.text).toBe(201);
      const at = new Date(Date.now() + 30 * DAY_MS - 1000).toISOString();
      const month = await stack.request('POST', linksOf(shipment.id), { token: tenant.token, body: { expiresAt: at } });
      expect(month.status, month.text).toBe(201);
      expect(month.body.expiresAt).toBe(at);
    });

    it('refuses an expiresAt in the past, now, beyond 30 days, or malformed, and unknown fields, with 400 and nothing stored', async () => {
      const shipment = await createShipment(stack, tenant);
      const post = (body: unknown) => stack.request('POST', linksOf(shipment.id), { token: tenant.token, body });
      expectInvalidParameter(await post({ expiresAt: new Date(Date.now() - 1000).toISOString() }), 'expiresAt', 'OutOfRange');
      expectInvalidParameter(await post({ expiresAt: new Date(Date.now() + 31 * DAY_MS).toISOString() }), 'expiresAt', 'OutOfRange');
      expectInvalidParameter(await post({ expiresAt: '0001-01-01T00:00:00Z' }), 'expiresAt', 'OutOfRange');
      expectInvalidParameter(await post({ expiresAt: 'next week' }), 'expiresAt', 'InvalidFormat');
      expectInvalidParameter(await post({ expiresAt: 1767225600000 }), 'expiresAt', 'InvalidFormat');
      expectInvalidParameter(await post({ expiresAt: null }), 'expiresAt', 'InvalidFormat');
      expectInvalidParameter(await post({ token: 'mine' }), 'token', 'UnknownField');
      expectInvalidParameter(await post({ url: 'https://evil.example' }), 'url', 'ReadOnly');
      expectInvalidParameter(await post({ revokedAt: null }), 'revokedAt', 'UnknownField');
      expectError(await post([]), 400, 'MalformedRequest');
      expectError(await post(null), 400, 'MalformedRequest');
      const listed = await stack.request('GET', linksOf(shipment.id), { token: tenant.token });
      expect(listed.body.items).toEqual([]);
    });

    it("is 404 ShipmentNotExists for an unknown shipment, another account's or tenant's, and 403 for a Viewer", async () => {
      expectError(await stack.request('POST', linksOf(randomUUID()), { token: tenant.token, body: {} }), 404, 'ShipmentNotExists');
      expectError(await stack.request('POST', linksOf('not-a-uuid'), { token: tenant.token, body: {} }), 404, 'ShipmentNotExists');
      const elsewhere = await createShipment(stack, tenant, { account: 1 });
      expectError(await stack.request('POST', linksOf(elsewhere.id), { token: tenant.token, body: {} }), 404, 'ShipmentNotExists');
      const foreign = await createShipment(stack, other);
      expectError(await stack.request('POST', linksOf(foreign.id), { token: tenant.token, body: {} }), 404, 'ShipmentNotExists');
      const shipment = await createShipment(stack, tenant);
      expectError(await stack.request('POST', linksOf(shipment.id), { token: viewer.token, body: {} }), 403, 'Forbidden');
      expectError(await stack.request('DELETE', `${linksOf(shipment.id)}/${randomUUID()}`, { token: viewer.token }), 403, 'Forbidden');
    });
  });

  describe('GET and DELETE', () => {
    it('lists links without urls, to Viewers too; DELETE revokes at once and again is a 204 that keeps the first revokedAt', async () => {
      const shipment = await createShipment(stack, tenant);
      const link = await createShareLink(stack, tenant, shipment.id);
      expect((await view(link.token)).status).toBe(200);
      const listed = await stack.request('GET', linksOf(shipment.id), { token: viewer.token });
      expect(listed.status, listed.text).toBe(200);
      expect(listed.body.items).toEqual([{ id: link.id, expiresAt: link.expiresAt, createdAt: link.createdAt, revokedAt: null }]);
      expect(listed.text).not.toContain(link.token);

      const revoked = await stack.request('DELETE', `${linksOf(shipment.id)}/${link.id}`, { token: tenant.token });
      expect(revoked.status, revoked.text).toBe(204);
      expectError(await view(link.token), 404, 'ShareLinkNotExists');
      const after = (await stack.request('GET', linksOf(shipment.id), { token: tenant.token })).body.items[0];
      expect(after.revokedAt).toMatch(TIMESTAMP_MS);
      expect((await stack.request('DELETE', `${linksOf(shipment.id)}/${link.id}`, { token: tenant.token })).status).toBe(204);
      expect((await stack.request('GET', linksOf(shipment.id), { token: tenant.token })).body.items[0].revokedAt).toBe(after.revokedAt);
    });

    it('answers the 404s in order: shipment, then link (unknown, not a UUID, or a link of another shipment)', async () => {
      const shipment = await createShipment(stack, tenant);
      const sibling = await createShipment(stack, tenant);
      const link = await createShareLink(stack, tenant, sibling.id);
      for (const linkId of [randomUUID(), 'nope', link.id]) {
        expectError(await stack.request('DELETE', `${linksOf(shipment.id)}/${linkId}`, { token: tenant.token }), 404, 'ShareLinkNotExists');
      }
      expectError(await stack.request('DELETE', `${linksOf(randomUUID())}/${link.id}`, { token: tenant.token }), 404, 'ShipmentNotExists');
      expectError(await stack.request('GET', linksOf(randomUUID()), { token: tenant.token }), 404, 'ShipmentNotExists');
      const foreign = await createShipment(stack, other);
      expectError(await stack.request('GET', linksOf(foreign.id), { token: tenant.token }), 404, 'ShipmentNotExists');
      // The sibling's link still works.
      expect((await view(link.token)).status).toBe(200);
    });

    describePaging('GET /shipments/{id}/share-links', 'status', () => ({
      newCollection: async () => linksOf((await createShipment(stack, tenant)).id),
      create: async (path) => {
        const response = await stack.request('POST', path, { token: tenant.token, body: {} });
        expect(response.status, response.text).toBe(201);
        const { url: _url, ...link } = response.body;
        return link;
      },
      list: (path, query = '') => stack.request('GET', `${path}${query}`, { token: tenant.token }),
    }));
  });

  describe('GET /v1/public/tracking/{token}', () => {
    it('shows exactly the listed fields, a LineString of every position in recordedAt order, and the privacy headers, without Authorization', async () => {
      const { shipment, times } = await trackedShipment(12);
      const link = await createShareLink(stack, tenant, shipment.id);
      const response = await eventually(() => view(link.token), (answer) => answer.body.lastPosition !== null, 'the last position');
      expect(response.status, response.text).toBe(200);
      expect(Object.keys(response.body).sort()).toEqual(VIEW_FIELDS);
      const body = response.body;
      expect(body.name).toBe('Pallets for Antwerp');
      expect(body.status).toBe('Planned');
      expect(body.origin).toEqual({ name: 'Origin DC', location: { lat: 51.9, lng: 4.4 } });
      expect(body.destination).toEqual({ name: 'Customer dock', location: { lat: 51.2, lng: 4.4 } });
      expect(body.lastPosition).toEqual({ lat: 51.9 - 11 * 0.0005, lng: 4.4 + 4 * 0.0003, recordedAt: new Date(times.at(-1)!).toISOString() });
      expect(Object.keys(body.lastPosition).sort()).toEqual(['lat', 'lng', 'recordedAt']);
      // No estimate without a plannedArrivalAt or a position-based estimate of the evaluation (no worker here).
      expect(body.eta).toBeNull();
      expect(body.track.type).toBe('LineString');
      expect(Object.keys(body.track).sort()).toEqual(['coordinates', 'type']);
      expect(body.track.coordinates).toEqual(times.map((_t, i) => [4.4 + (i % 7) * 0.0003, 51.9 - i * 0.0005]));
      expect(body.visits).toEqual([]);
      expect(body.updatedAt).toMatch(TIMESTAMP_MS);
      expect(Date.parse(body.updatedAt)).toBeGreaterThanOrEqual(times.at(-1)!);
      // Nothing of the shipment's internals: no id of any kind, no metadata.
      for (const secret of [shipment.id, tenant.accountIds[0]!, tenant.tenantId, 'internal']) expect(response.text).not.toContain(secret);
      expect(response.headers.get('cache-control')).toBe('private, max-age=30');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
      expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(response.headers.get('ratelimit-policy')).toMatch(/"public-tracking"/);
    });

    it('names the visits by their places, and shows null track and position before two positions exist', async () => {
      const shipment = await createShipment(stack, tenant, { name: 'Nothing yet' });
      const link = await createShareLink(stack, tenant, shipment.id);
      const empty = await view(link.token);
      expect(empty.status, empty.text).toBe(200);
      expect(empty.body).toMatchObject({ origin: null, destination: null, lastPosition: null, eta: null, track: null, visits: [] });
      const place = (await createPointOfInterest(stack, tenant, { body: { name: 'Cross-dock Ghent' } })).pointOfInterest;
      const arrivedAt = new Date(Date.now() - 3600_000);
      await oms.query(
        `INSERT INTO visits (id, tenant_id, account_id, shipment_id, poi_id, arrived_at, departed_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, now(), now())`,
        [randomUUID(), tenant.tenantId, tenant.accountIds[0], shipment.id, place.id, arrivedAt, new Date(arrivedAt.getTime() + 600_000)],
      );
      const visited = await view(link.token);
      expect(visited.body.visits).toEqual([
        { name: 'Cross-dock Ghent', arrivedAt: arrivedAt.toISOString(), departedAt: new Date(arrivedAt.getTime() + 600_000).toISOString() },
      ]);
      expect(visited.text).not.toContain(place.id);
    });

    it("shows the shipment's eta exactly as GET /shipments/{id} does, and the page's updatedAt moves with it", async () => {
      const destination = (await createPointOfInterest(stack, tenant, { body: { name: 'Planned dock' } })).pointOfInterest;
      const plannedArrivalAt = new Date(Date.now() + 2 * DAY_MS).toISOString().replace(/\.\d{3}Z$/, '.000Z');
      const shipment = await createShipment(stack, tenant, { body: { destinationId: destination.id, plannedArrivalAt } });
      const link = await createShareLink(stack, tenant, shipment.id);
      const [publicView, own] = await Promise.all([view(link.token), stack.request('GET', `${base}/shipments/${shipment.id}`, { token: tenant.token })]);
      expect(publicView.status, publicView.text).toBe(200);
      expect(own.body.eta).not.toBeNull();
      expect(own.body.eta.arrivalAt).toBe(plannedArrivalAt);
      expect(publicView.body.eta).toEqual(own.body.eta);
      expect(Date.parse(publicView.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(own.body.eta.calculatedAt));
    });

    it('simplifies a long track to at most 500 points', async () => {
      const { shipment, times } = await trackedShipment(1200);
      const link = await createShareLink(stack, tenant, shipment.id);
      const response = await view(link.token);
      expect(response.status, response.text).toBe(200);
      expect(response.body.track.coordinates.length).toBeLessThanOrEqual(500);
      expect(response.body.track.coordinates.length).toBeGreaterThan(2);
      expect(response.body.track.coordinates[0]).toEqual([4.4, 51.9]);
      expect(response.body.track.coordinates.at(-1)).toEqual([4.4 + ((times.length - 1) % 7) * 0.0003, 51.9 - (times.length - 1) * 0.0005]);
    });

    it('is the same 404 ShareLinkNotExists for unknown, malformed, expired and revoked tokens and a deleted shipment', async () => {
      const expectGone = async (token: string) => {
        const response = await view(token);
        expectError(response, 404, 'ShareLinkNotExists');
        expect(response.headers.get('referrer-policy')).toBe('no-referrer');
        return response.body.error.message as string;
      };
      const messages = new Set<string>();
      messages.add(await expectGone(randomBytes(16).toString('base64url')));
      messages.add(await expectGone('short'));
      messages.add(await expectGone('x'.repeat(200)));
      messages.add(await expectGone(encodeURIComponent("' OR 1=1 --")));

      const shipment = await createShipment(stack, tenant);
      const expiring = await createShareLink(stack, tenant, shipment.id);
      expect((await view(expiring.token)).status).toBe(200);
      await oms.query("UPDATE share_links SET expires_at = now() - interval '1 millisecond', created_at = now() - interval '1 day' WHERE id = $1", [expiring.id]);
      messages.add(await expectGone(expiring.token));

      const revoked = await createShareLink(stack, tenant, shipment.id);
      await stack.request('DELETE', `${linksOf(shipment.id)}/${revoked.id}`, { token: tenant.token });
      messages.add(await expectGone(revoked.token));

      const doomed = await createShipment(stack, tenant);
      const orphan = await createShareLink(stack, tenant, doomed.id);
      expect((await stack.request('DELETE', `${base}/shipments/${doomed.id}`, { token: tenant.token })).status).toBe(204);
      messages.add(await expectGone(orphan.token));
      // Deleted with the shipment, not merely hidden.
      expect((await oms.query('SELECT 1 FROM share_links WHERE id = $1', [orphan.id])).rowCount).toBe(0);
      expect(messages.size).toBe(1);
    });

    it('ignores an Authorization header, and a token of one tenant shows its own shipment to anyone', async () => {
      const shipment = await createShipment(stack, tenant, { name: 'Anyone with the link' });
      const link = await createShareLink(stack, tenant, shipment.id);
      const variants: Record<string, string>[] = [{}, { Authorization: `Bearer ${other.token}` }, { Authorization: 'Bearer forged' }];
      for (const headers of variants) {
        const response = await view(link.token, headers);
        expect(response.status, response.text).toBe(200);
        expect(response.body.name).toBe('Anyone with the link');
      }
    });
  });

  it('is in the SDK: create, list, revoke, and the public view without credentials', async () => {
    const client = new TrackingClient({ baseUrl: stack.baseUrl, tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: tenant.applicationSecret });
    const shipment = await createShipment(stack, tenant, { name: 'Through the SDK' });
    const links = client.account(tenant.accountIds[0]!).shareLinks;
    const link = await links.create(shipment.id);
    expect(link.url).toMatch(/^https:\/\/track\.example\.com\/track\//);
    const token = link.url.split('/').pop()!;
    expect((await client.publicTracking(token)).name).toBe('Through the SDK');
    expect((await links.list(shipment.id).toArray()).map(({ id }) => id)).toEqual([link.id]);
    await links.revoke(shipment.id, link.id);
    const gone = await client.publicTracking(token).catch((error: unknown) => error);
    expect(gone).toBeInstanceOf(TrackingApiError);
    expect((gone as TrackingApiError).code).toBe('ShareLinkNotExists');
  });

  describe('rate limit', () => {
    let limited: TestStack;
    afterAll(async () => limited?.stop());

    it('limits the public view per client address under its own policy, before any lookup', async () => {
      limited = await TestStack.start({ env: { RATE_LIMIT_PUBLIC_TRACKING: '1/1m burst 3' } });
      const answers: HttpResult[] = [];
      for (let i = 0; i < 4; i++) answers.push(await limited.request('GET', `/v1/public/tracking/${randomBytes(16).toString('base64url')}`));
      expect(answers.slice(0, 3).map((answer) => answer.status)).toEqual([404, 404, 404]);
      expectError(answers[3]!, 429, 'RateLimitExceeded', { policy: 'public-tracking' });
      expect(Number(answers[3]!.headers.get('retry-after'))).toBeGreaterThan(0);
      // Other routes keep the address's own budget.
      expect((await limited.request('GET', '/v1/.well-known/jwks.json')).status).toBe(200);
    });
  });
});
