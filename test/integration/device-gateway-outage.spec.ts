import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevice, devicesPath } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { startTestDeviceGateway, type TestDeviceGateway } from '../support/device-gateway.js';
import { OwnNatsServer } from '../support/nats-server.js';
import { waitUntil } from '../support/ops-endpoints.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/**
 * NATS restarted while trackers send, on a nats-server of the test's own: while it is down a message
 * is answered 503 (never acknowledged, never lost: the resend is stored), and once it is back the device
 * gateway stores again and its revocation check works again, without a restart of its own.
 */
describe('device gateway through a NATS restart', { timeout: 90000 }, () => {
  let nats: OwnNatsServer;
  let stack: TestStack;
  let tenant: TestTenant;
  let devices: TestDeviceGateway;

  beforeAll(async () => {
    nats = await OwnNatsServer.start();
    stack = await TestStack.start({ env: { NATS_URL: nats.url, NATS_RECONNECT_TIME_WAIT_MS: '200' } });
    tenant = await createTenant(stack);
    devices = await startTestDeviceGateway(stack, { DEVICE_RPC_TIMEOUT_MS: '2000', DEVICE_REVOCATION_CHECK_MS: '300' });
  });
  afterAll(async () => {
    await nats?.start();
    await devices?.stop();
    await stack?.stop();
    await nats?.stop();
  });

  it('answers 503 while NATS is down, stores again once it is back, and still closes revoked connections', async () => {
    const device = (await createDevice(stack, tenant)).device;
    const created = (await stack.request('POST', `${devicesPath(tenant)}/${device.id}/credentials`, { token: tenant.token, body: { protocol: 'Http' } })).body;
    const post = (seconds: number) =>
      fetch(`${devices.address('http')}/v1/readings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${created.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ readings: [{ recordedAt: new Date(Math.floor(Date.now() / 1000) * 1000 - seconds * 1000).toISOString(), shockG: 1 }] }),
      });
    expect((await post(30)).status).toBe(200);

    await nats.stop();
    const during = await post(20);
    expect([during.status, during.headers.get('retry-after')]).toEqual([503, '1']);

    await nats.start();
    let after: Response | undefined;
    await waitUntil(async () => (after = await post(20)).status === 200, 'the device gateway stores again', 30000);
    expect(await after!.json()).toEqual({ accepted: 1, duplicates: 0, unassigned: 1, rejected: [] });
    // The API gateway reconnects to NATS on its own schedule: the device gateway may be back before it, and
    // until then a read answers 503 or 504, which a client retries (a clean-clone CI run met that here).
    let stored: HttpResult<{ readings: unknown[] }> | undefined;
    await waitUntil(
      async () => (stored = await stack.request('GET', `${devicesPath(tenant)}/${device.id}/readings`, { token: tenant.token })).status < 503,
      'the API gateway answers again',
      30000,
    );
    expect(stored!.status).toBe(200);
    expect(stored!.body.readings).toHaveLength(2);

    // The periodic revocation check asks the DMS again after the restart.
    const identity = (await devices.gateway.authenticator.authenticate('Http', '', created.secret))!;
    let revoked = false;
    const stop = devices.gateway.authenticator.watch(identity, () => (revoked = true));
    expect((await stack.request('DELETE', `${devicesPath(tenant)}/${device.id}/credentials/${created.id}`, { token: tenant.token })).status).toBe(204);
    await waitUntil(() => revoked, 'the deleted credential is seen as revoked', 10000);
    stop();
  });
});
