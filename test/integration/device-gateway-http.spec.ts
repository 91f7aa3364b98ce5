import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect as connectTcp, type Socket } from 'node:net';
import type { Reading } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KNOT_MPS } from '../../apps/device-gateway/src/http/osmand.js';
import { createDevice, devicesPath } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { startTestDeviceGateway, type TestDeviceGateway } from '../support/device-gateway.js';
import { expectError, expectInvalidParameter } from '../support/http-assertions.js';
import { makeTlsFiles } from '../support/tls-files.js';
import { expectUnauthorized } from '../support/tokens.js';
import { TestStack } from '../support/stack.js';

/** A tracker of the tenant: its device and an Http credential. */
interface Tracker {
  deviceId: string;
  credentialId: string;
  identifier: string;
  secret: string;
}

describe('device gateway over HTTP: our JSON, OsmAnd and Traccar Client', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let devices: TestDeviceGateway;
  let base: string;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack);
    devices = await startTestDeviceGateway(stack);
    base = devices.address('http');
  });
  afterAll(async () => {
    await devices?.stop();
    await stack?.stop();
  });

  const minutesAgo = (minutes: number, from = Date.now()) => new Date(Math.floor(from / 1000) * 1000 - minutes * 60_000);
  async function tracker(of = tenant, identifier?: string): Promise<Tracker> {
    const device = (await createDevice(stack, of)).device;
    const created = await stack.request('POST', `${devicesPath(of)}/${device.id}/credentials`, {
      token: of.token,
      body: identifier === undefined ? { protocol: 'Http' } : { protocol: 'Http', identifier },
    });
    expect(created.status, created.text).toBe(201);
    return { deviceId: device.id, credentialId: created.body.id, identifier: created.body.identifier, secret: created.body.secret };
  }
  const readingsOf = async (deviceId: string, of = tenant): Promise<Reading[]> => {
    const page = await stack.request('GET', `${devicesPath(of)}/${deviceId}/readings`, { token: of.token });
    expect(page.status, page.text).toBe(200);
    return page.body.readings;
  };
  const send = (method: string, path: string, options: { secret?: string; body?: unknown; rawBody?: string; headers?: Record<string, string>; at?: string } = {}) =>
    stack.request(method, path, { baseUrl: options.at ?? base, token: options.secret, body: options.body, rawBody: options.rawBody, headers: options.headers });
  /** An OsmAnd GET with the tracker's secret as a bearer header; `secret` null sends none. */
  const osmand = (t: Tracker, params: Record<string, string | number>, secret: string | null = t.secret) =>
    send('GET', `/?${new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))}`, { secret: secret ?? undefined });

  describe('POST /v1/readings', () => {
    it('stores the readings of the credential\'s device, counts a resend as duplicates, and refuses bad entries one by one', async () => {
      const t = await tracker();
      const at = minutesAgo(5);
      const readings = [
        { recordedAt: at.toISOString(), temperatureC: 4.5, location: { lat: 51.9, lng: 4.4 } },
        { recordedAt: new Date(at.getTime() + 1000).toISOString(), temperatureC: 400 },
        { recordedAt: new Date(at.getTime() + 2000).toISOString(), humidityPercent: 40 },
        { recordedAt: new Date(at.getTime() + 3000).toISOString(), humidityPercent: 41, deviceId: t.deviceId },
      ];
      const first = await send('POST', '/v1/readings', { secret: t.secret, body: { readings } });
      expect(first.status, first.text).toBe(200);
      expect(first.body).toEqual({
        accepted: 2,
        duplicates: 0,
        // The device is on no shipment: accepted, stored, and reaching no shipment.
        unassigned: 2,
        rejected: [
          { index: 1, error: expect.objectContaining({ code: 'InvalidParameter', details: { field: 'readings.1.temperatureC', issue: 'OutOfRange' } }) },
          { index: 3, error: expect.objectContaining({ code: 'InvalidParameter', details: { field: 'readings.3.deviceId', issue: 'UnknownField' } }) },
        ],
      });
      const stored = await readingsOf(t.deviceId);
      expect(stored.map((r) => [r.recordedAt, r.temperatureC, r.humidityPercent])).toEqual([
        [readings[0]!.recordedAt, 4.5, null],
        [readings[2]!.recordedAt, null, 40],
      ]);
      const again = await send('POST', '/v1/readings', { secret: t.secret, body: { readings: [readings[0], readings[2]] } });
      expect(again.body).toEqual({ accepted: 0, duplicates: 2, unassigned: 0, rejected: [] });
      const conflicting = await send('POST', '/v1/readings', { secret: t.secret, body: { readings: [{ ...readings[0], temperatureC: 5 }] } });
      expect(conflicting.body.rejected[0].error.details).toEqual({ field: 'readings.0.recordedAt', issue: 'ConflictingReading' });
      expect(await readingsOf(t.deviceId)).toHaveLength(2);
    });

    it('refuses a missing or wrong secret (401), another media type (415), garbage (400), a bad envelope (400) and a large body (413)', async () => {
      const t = await tracker();
      const body = { readings: [{ recordedAt: minutesAgo(1).toISOString(), temperatureC: 1 }] };
      expectUnauthorized(await send('POST', '/v1/readings', { body }));
      expectUnauthorized(await send('POST', '/v1/readings', { secret: `${t.secret}x`, body }));
      expectUnauthorized(await send('POST', '/v1/readings', { secret: 'dvs_', body }));
      expectError(await send('POST', '/v1/readings', { secret: t.secret, rawBody: JSON.stringify(body), headers: { 'content-type': 'text/plain' } }), 415, 'UnsupportedMediaType');
      expectError(await send('POST', '/v1/readings', { secret: t.secret, rawBody: '{"readings": [', headers: { 'content-type': 'application/json' } }), 400, 'MalformedRequest');
      expectError(await send('POST', '/v1/readings', { secret: t.secret, body: [] }), 400, 'MalformedRequest');
      expectInvalidParameter(await send('POST', '/v1/readings', { secret: t.secret, body: { readings: [] } }), 'readings', 'OutOfRange');
      expectInvalidParameter(await send('POST', '/v1/readings', { secret: t.secret, body: { readings: Array.from({ length: 1001 }, () => body.readings[0]) } }), 'readings', 'OutOfRange');
      expectInvalidParameter(await send('POST', '/v1/readings', { secret: t.secret, body: { ...body, extra: 1 } }), 'extra', 'UnknownField');
      expectError(await send('POST', '/v1/readings', { secret: t.secret, rawBody: `{"readings":[],"pad":"${'x'.repeat(1024 * 1024)}"}`, headers: { 'content-type': 'application/json' } }), 413, 'PayloadTooLarge');
      expectError(await send('GET', '/v1/readings', { secret: t.secret }), 404, 'RouteNotFound');
      expectError(await send('POST', '/elsewhere', { secret: t.secret, body }), 404, 'RouteNotFound');
      expect(await readingsOf(t.deviceId)).toEqual([]);
    });

    it('refuses at once a deleted credential, even one it accepted a moment ago, and a retired device\'s', async () => {
      const t = await tracker();
      const u = await tracker();
      const reading = (minutes: number) => ({ readings: [{ recordedAt: minutesAgo(minutes).toISOString(), temperatureC: 3 }] });
      expect((await send('POST', '/v1/readings', { secret: t.secret, body: reading(3) })).status).toBe(200);
      expect((await send('POST', '/v1/readings', { secret: u.secret, body: reading(3) })).status).toBe(200);
      expect((await stack.request('DELETE', `${devicesPath(tenant)}/${t.deviceId}/credentials/${t.credentialId}`, { token: tenant.token })).status).toBe(204);
      expect((await stack.request('POST', `${devicesPath(tenant)}/${u.deviceId}/retire`, { token: tenant.token })).status).toBe(204);
      expectUnauthorized(await send('POST', '/v1/readings', { secret: t.secret, body: reading(2) }));
      expectUnauthorized(await send('POST', '/v1/readings', { secret: u.secret, body: reading(2) }));
      expect(await readingsOf(t.deviceId)).toHaveLength(1);
      expect(await readingsOf(u.deviceId)).toHaveLength(1);
    });
  });

  describe('OsmAnd', () => {
    it('stores a position from the query string, in knots, percent and seconds, and answers 200 with an empty body', async () => {
      const t = await tracker();
      const at = minutesAgo(4);
      const answer = await osmand(t, { id: t.identifier, lat: 52.1, lon: 5.2, timestamp: at.getTime() / 1000, speed: 10, bearing: 90, altitude: 12, accuracy: 8, batt: 77, hdop: 1, valid: 'true' });
      expect(answer.status, answer.text).toBe(200);
      expect(answer.text).toBe('');
      const [stored] = await readingsOf(t.deviceId);
      expect(stored).toMatchObject({
        recordedAt: at.toISOString(),
        location: { lat: 52.1, lng: 5.2, accuracyMeters: 8, altitudeMeters: 12, speedMps: 10 * KNOT_MPS, headingDegrees: 90 },
        batteryPercent: 77,
      });
    });

    it('takes the secret as /t/{secret}/ (with or without the trailing slash) or a bearer header, a form body, and every timestamp form', async () => {
      const t = await tracker();
      const at = minutesAgo(10);
      const params = (timestamp: string | number, lat: number) => new URLSearchParams({ id: t.identifier, lat: String(lat), lon: '5', timestamp: String(timestamp) }).toString();
      expect((await send('GET', `/t/${t.secret}/?${params(at.getTime() / 1000, 50)}`)).status).toBe(200);
      expect((await send('GET', `/t/${t.secret}?${params(at.getTime() + 1000, 50.1)}`)).status).toBe(200);
      const form = await send('POST', `/t/${t.secret}/`, { rawBody: params(new Date(at.getTime() + 2000).toISOString(), 50.2), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(form.status, form.text).toBe(200);
      expect((await send('POST', `/?${params(at.getTime() / 1000 + 3, 50.3)}`, { secret: t.secret })).status).toBe(200);
      const stored = await readingsOf(t.deviceId);
      expect(stored.map((r) => [r.recordedAt, r.location?.lat])).toEqual([0, 1, 2, 3].map((s) => [new Date(at.getTime() + s * 1000).toISOString(), 50 + s / 10]));
      // The same report again is a duplicate: 200, stored once.
      expect((await send('GET', `/t/${t.secret}/?${params(at.getTime() / 1000, 50)}`)).status).toBe(200);
      expect(await readingsOf(t.deviceId)).toHaveLength(4);
    });

    it('takes a negative speed, bearing or accuracy as unknown', async () => {
      const t = await tracker();
      const answer = await osmand(t, { id: t.identifier, lat: 1, lon: 2, timestamp: minutesAgo(1).getTime(), speed: -1, bearing: -1, accuracy: -1 });
      expect(answer.status, answer.text).toBe(200);
      expect((await readingsOf(t.deviceId))[0]?.location).toEqual({ lat: 1, lng: 2, accuracyMeters: null, altitudeMeters: null, speedMps: null, headingDegrees: null });
    });

    it('answers 400 naming the bad parameter, 401 without a valid secret and 403 for another id; stores nothing', async () => {
      const t = await tracker();
      const good = { id: t.identifier, lat: 1, lon: 2, timestamp: minutesAgo(1).getTime() };
      const without = (name: string) => Object.fromEntries(Object.entries(good).filter(([key]) => key !== name));
      expectInvalidParameter(await osmand(t, without('id')), 'id', 'Required');
      expectInvalidParameter(await osmand(t, without('timestamp')), 'timestamp', 'Required');
      expectInvalidParameter(await osmand(t, without('lat')), 'lat', 'Required');
      expectInvalidParameter(await osmand(t, without('lon')), 'lon', 'Required');
      expectInvalidParameter(await osmand(t, { ...good, lat: 'north' }), 'lat', 'InvalidFormat');
      expectInvalidParameter(await osmand(t, { ...good, lat: 91 }), 'lat', 'OutOfRange');
      expectInvalidParameter(await osmand(t, { ...good, lon: -181 }), 'lon', 'OutOfRange');
      expectInvalidParameter(await osmand(t, { ...good, batt: 101 }), 'batt', 'OutOfRange');
      expectInvalidParameter(await osmand(t, { ...good, speed: 'fast' }), 'speed', 'InvalidFormat');
      expectInvalidParameter(await osmand(t, { ...good, timestamp: 'yesterday' }), 'timestamp', 'InvalidFormat');
      expectInvalidParameter(await osmand(t, { ...good, timestamp: Date.now() + 3_600_000 }), 'timestamp', 'OutOfRange');
      expectUnauthorized(await osmand(t, good, null));
      expectUnauthorized(await osmand(t, good, 'dvs_guess'));
      expectError(await osmand(t, { ...good, id: `${t.identifier}x` }), 403, 'Forbidden');
      expect(await readingsOf(t.deviceId)).toEqual([]);
    });
  });

  describe('Traccar Client JSON', () => {
    const body = (id: string, at: Date, extra: Record<string, unknown> = {}) => ({
      device_id: id,
      location: {
        timestamp: at.toISOString(),
        coords: { latitude: 48.1, longitude: 11.5, accuracy: 5, speed: 3.5, heading: -1, altitude: 520 },
        battery: { level: 0.42, is_charging: false },
        is_moving: true,
        ...extra,
      },
    });

    it('stores the position in m/s, the battery level as percent, -1 as unknown', async () => {
      const t = await tracker(tenant, `phone-${Date.now()}`);
      const at = minutesAgo(2);
      const answer = await send('POST', `/t/${t.secret}/`, { body: body(t.identifier, at) });
      expect(answer.status, answer.text).toBe(200);
      expect(answer.text).toBe('');
      const [stored] = await readingsOf(t.deviceId);
      expect(stored).toMatchObject({
        recordedAt: at.toISOString(),
        location: { lat: 48.1, lng: 11.5, accuracyMeters: 5, altitudeMeters: 520, speedMps: 3.5, headingDegrees: null },
        batteryPercent: 42,
      });
    });

    it('answers 403 for another device_id, 400 naming what is wrong, and 401 without a secret', async () => {
      const t = await tracker();
      const at = minutesAgo(2);
      expectError(await send('POST', '/', { secret: t.secret, body: body('someone-else', at) }), 403, 'Forbidden');
      expectInvalidParameter(await send('POST', '/', { secret: t.secret, body: { location: body(t.identifier, at).location } }), 'device_id', 'Required');
      expectInvalidParameter(await send('POST', '/', { secret: t.secret, body: body(t.identifier, at, { battery: { level: 1.5 } }) }), 'location.battery.level', 'OutOfRange');
      expectInvalidParameter(await send('POST', '/', { secret: t.secret, body: body(t.identifier, at, { coords: { latitude: 100, longitude: 1 } }) }), 'location.coords.latitude', 'OutOfRange');
      expectInvalidParameter(await send('POST', '/', { secret: t.secret, body: body(t.identifier, at, { timestamp: 'soon' }) }), 'location.timestamp', 'InvalidFormat');
      expectError(await send('POST', '/', { secret: t.secret, rawBody: 'not json', headers: { 'content-type': 'application/json' } }), 400, 'MalformedRequest');
      expectUnauthorized(await send('POST', '/', { body: body(t.identifier, at) }));
      expect(await readingsOf(t.deviceId)).toEqual([]);
    });
  });

  describe('limits and protections', () => {
    it('limits each device\'s messages: 429 with Retry-After, nothing stored', async () => {
      const limited = await startTestDeviceGateway(stack, { DEVICE_RATE_LIMIT: '1/1m burst 2' });
      try {
        const t = await tracker();
        const post = (minutes: number) => send('POST', '/v1/readings', { at: limited.address('http'), secret: t.secret, body: { readings: [{ recordedAt: minutesAgo(minutes).toISOString(), shockG: 1 }] } });
        expect((await post(3)).status).toBe(200);
        expect((await post(2)).status).toBe(200);
        const refused = await post(1);
        expectError(refused, 429, 'RateLimitExceeded');
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(await readingsOf(t.deviceId)).toHaveLength(2);
        // Another device has its own budget.
        expect((await send('POST', '/v1/readings', { at: limited.address('http'), secret: (await tracker()).secret, body: { readings: [{ recordedAt: minutesAgo(1).toISOString(), shockG: 1 }] } })).status).toBe(200);
      } finally {
        await limited.stop();
      }
    });

    it("charges the tenant's readings to the bucket POST /readings charges", async () => {
      const limitedTenant = await createTenant(stack);
      const overrides = JSON.stringify({ [limitedTenant.tenantId]: { readings: '4/1h burst 4' } });
      await stack.restartGateway({ RATE_LIMIT_TENANT_OVERRIDES: overrides });
      const limited = await startTestDeviceGateway(stack, { RATE_LIMIT_TENANT_OVERRIDES: overrides });
      try {
        const t = await tracker(limitedTenant);
        const entries = (n: number, offset: number) => Array.from({ length: n }, (_, i) => ({ recordedAt: minutesAgo(offset + i).toISOString(), lightLux: 1 }));
        const api = await stack.request('POST', `/v1/accounts/${limitedTenant.accountIds[0]}/readings`, {
          token: limitedTenant.token,
          body: { readings: entries(3, 10).map((entry) => ({ ...entry, deviceId: t.deviceId })) },
        });
        expect(api.body, api.text).toMatchObject({ accepted: 3 });
        const over = await send('POST', '/v1/readings', { at: limited.address('http'), secret: t.secret, body: { readings: entries(2, 20) } });
        expectError(over, 429, 'RateLimitExceeded');
        expect((await send('POST', '/v1/readings', { at: limited.address('http'), secret: t.secret, body: { readings: entries(1, 30) } })).body).toMatchObject({ accepted: 1 });
        expect(await readingsOf(t.deviceId, limitedTenant)).toHaveLength(4);
      } finally {
        await limited.stop();
        await stack.restartGateway();
      }
    });

    it('refuses an address after its failed authentications, even with the right secret', async () => {
      const limited = await startTestDeviceGateway(stack, { DEVICE_AUTH_FAILURE_LIMIT: '2/1h burst 2' });
      try {
        const t = await tracker();
        const post = (secret: string) => send('POST', '/v1/readings', { at: limited.address('http'), secret, body: { readings: [{ recordedAt: minutesAgo(1).toISOString(), shockG: 1 }] } });
        expectUnauthorized(await post('dvs_guess1'));
        expectUnauthorized(await post('dvs_guess2'));
        const refused = await post(t.secret);
        expectError(refused, 429, 'RateLimitExceeded', { policy: 'device-authentication' });
        expect(refused.headers.get('retry-after')).toEqual(expect.any(String));
      } finally {
        await limited.stop();
      }
    });

    it('closes connections beyond DEVICE_MAX_CONNECTIONS at once, and a connection that sends nothing at the deadline', async () => {
      // The deadline is long enough that the test's own pauses on a loaded machine (it hosts the whole stack)
      // cannot let the first connection time out before the second arrives.
      const limited = await startTestDeviceGateway(stack, { DEVICE_MAX_CONNECTIONS: '1', DEVICE_AUTH_TIMEOUT_MS: '3000' });
      const { port } = new URL(limited.address('http'));
      const opened: Socket[] = [];
      const open = () =>
        new Promise<{ socket: Socket; closed: Promise<number> }>((resolve, reject) => {
          const started = Date.now();
          const socket = connectTcp(Number(port), '127.0.0.1', () => resolve({ socket, closed }));
          opened.push(socket);
          const closed = new Promise<number>((done) => socket.once('close', () => done(Date.now() - started)));
          socket.once('error', reject);
          // Read whatever the gateway writes before closing (Node's HTTP server may answer 408 at its own
          // request deadline): a paused socket holding unread bytes never emits 'end', so never 'close'.
          socket.resume();
        });
      try {
        const first = await open();
        const second = await open();
        // The second is closed by the gateway right away; the first at the deadline, having sent nothing.
        expect(await second.closed).toBeLessThan(2000);
        const firstLife = await first.closed;
        expect(firstLife).toBeGreaterThanOrEqual(2900);
        expect(firstLife).toBeLessThan(10000);
        // Its place is free again.
        const t = await tracker();
        expect((await send('POST', '/v1/readings', { at: limited.address('http'), secret: t.secret, headers: { connection: 'close' }, body: { readings: [{ recordedAt: minutesAgo(1).toISOString(), shockG: 1 }] } })).status).toBe(200);
      } finally {
        // A failed expectation must not leave a connection holding the stop.
        for (const socket of opened) socket.destroy();
        await limited.stop();
      }
    });
  });

  it('speaks HTTPS when DEVICE_TLS_CERT_FILE and DEVICE_TLS_KEY_FILE are set', async () => {
    const files = makeTlsFiles();
    const secure = await startTestDeviceGateway(stack, { DEVICE_TLS_CERT_FILE: files.serverCert, DEVICE_TLS_KEY_FILE: files.serverKey });
    try {
      const address = secure.address('http');
      expect(address).toMatch(/^https:\/\//);
      const t = await tracker();
      const body = JSON.stringify({ readings: [{ recordedAt: minutesAgo(1).toISOString(), shockG: 3 }] });
      const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const request = httpsRequest(
          `${address}/v1/readings`,
          { method: 'POST', ca: readFileSync(files.ca), headers: { authorization: `Bearer ${t.secret}`, 'content-type': 'application/json' } },
          (response) => {
            let text = '';
            response.on('data', (chunk: Buffer) => (text += chunk.toString()));
            response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
          },
        );
        request.once('error', reject);
        request.end(body);
      });
      expect(answer).toEqual({ status: 200, text: JSON.stringify({ accepted: 1, duplicates: 0, unassigned: 1, rejected: [] }) });
      // Plain HTTP on the TLS port gets no answer.
      await expect(fetch(address.replace('https:', 'http:') + '/v1/readings', { method: 'POST', body })).rejects.toThrow();
    } finally {
      await secure.stop();
      files.remove();
    }
  });

  it('counts messages, readings and failed authentications in its metrics', async () => {
    const text = await devices.metrics.registry.metrics();
    expect(text).toMatch(/device_messages_total\{[^}]*protocol="Http"[^}]*outcome="committed"[^}]*\} \d+/);
    expect(text).toMatch(/device_readings_total\{[^}]*outcome="accepted"[^}]*\} \d+/);
    expect(text).toMatch(/device_authentication_failures_total\{[^}]*reason="credentials"[^}]*\} \d+/);
    expect(text).toMatch(/device_ack_latency_seconds_count\{[^}]*protocol="Http"[^}]*\} \d+/);
  });
});
