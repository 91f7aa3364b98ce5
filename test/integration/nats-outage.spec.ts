import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createTenant } from '../factories/identity.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { waitUntil } from '../support/ops-endpoints.js';
import { OwnNatsServer } from '../support/nats-server.js';
import { killServices, spawnService } from '../support/processes.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/**
 * NATS goes away and comes back, on a nats-server of the test's own (the shared one stays up for every
 * other test). Reconnection waits are short (200 ms), so that the NATS client's default of 10
 * attempts would give up after about 10 x (200 ms + up to 100 ms jitter) = 3 s; the outage lasts longer.
 */
const RECONNECT_TIME_WAIT_MS = 200;
const OLD_GIVE_UP_MS = 10 * (RECONNECT_TIME_WAIT_MS + 100);
const RPC_TIMEOUT_MS = 5000;

let nats: OwnNatsServer | undefined;
let stack: TestStack | undefined;
afterEach(async () => {
  await killServices();
  // The server first: the stack's connections then close without waiting for a reconnection.
  await nats?.start();
  await stack?.stop();
  await nats?.stop();
  stack = undefined;
  nats = undefined;
});

async function timed(request: () => Promise<HttpResult>): Promise<{ response: HttpResult; ms: number }> {
  const started = performance.now();
  const response = await request();
  return { response, ms: performance.now() - started };
}

describe('a NATS outage', { timeout: 90000 }, () => {
  it('longer than 10 reconnection attempts: calls fail fast with 503 and Retry-After, readiness says so, and all serve again once NATS is back', async () => {
    nats = await OwnNatsServer.start();
    stack = await TestStack.start({
      env: { NATS_URL: nats.url, NATS_RECONNECT_TIME_WAIT_MS: String(RECONNECT_TIME_WAIT_MS), RPC_TIMEOUT_MS: String(RPC_TIMEOUT_MS) },
    });
    const running = stack;
    const tenant = await createTenant(running);
    const shipment = await createShipment(running, tenant);
    const path = `/v1/accounts/${tenant.accountIds[0]}/shipments/${shipment.id}`;
    const get = () => running.request('GET', path, { token: tenant.token });
    expect((await get()).status).toBe(200);
    expect((await running.request('GET', '/health/ready')).status).toBe(200);

    await nats.stop();
    const outageStarted = Date.now();
    // Readiness may answer from a short cache: poll until it shows the outage.
    await waitUntil(async () => {
      const ready = await running.request('GET', '/health/ready');
      return ready.status === 503 && ready.body.checks.nats === 'failing';
    }, 'the gateway reports NATS failing', 5000);

    // Until the old clients would have given up and beyond, every call fails at once, not after RPC_TIMEOUT_MS.
    const during: { response: HttpResult; ms: number }[] = [];
    while (Date.now() - outageStarted < OLD_GIVE_UP_MS + 1500) during.push(await timed(get));
    for (const { response, ms } of during) {
      expect([response.status, response.body?.error?.code, response.headers.get('retry-after')]).toEqual([503, 'ServiceUnavailable', '1']);
      expect(ms).toBeLessThan(1000);
    }
    expect(during.length).toBeGreaterThan(1);

    await nats.start();
    // The OMS and DMS listen again (their server connections reconnected), and the gateway reaches them.
    await waitUntil(async () => (await get()).status === 200, 'the shipment is served again', 15000);
    await waitUntil(async () => (await running.request('GET', '/health/ready')).status === 200, 'the gateway reports ready', 15000);
    const ready = await running.request('GET', '/health/ready');
    expect(ready.body.checks).toMatchObject({ nats: 'ok', oms: 'ok', dms: 'ok' });
    // The OMS's own client of the DMS reconnects on its own schedule: until it has, the delete (which
    // releases the shipment's devices in the DMS) fails fast with 503 and rolls back, as a client retries.
    let deleted: HttpResult | undefined;
    await waitUntil(
      async () => (deleted = await running.request('DELETE', path, { token: tenant.token })).status !== 503,
      'the OMS reaches the DMS again',
      15000,
    );
    expect(deleted?.status).toBe(204);
  });
});

describe('a NATS connection closed for good', { timeout: 90000 }, () => {
  it('ends the process with a fatal log line, so that its supervisor starts a fresh one', async () => {
    // Reconnection never gives up on an outage; it does give up when the server refuses the credentials
    // twice in a row (here: the DMS's password changed on the server while the DMS was disconnected).
    const config = fileURLToPath(new URL('../../deploy/k8s/overlays/dev/nats-server.conf', import.meta.url));
    const passwords = { NATS_GATEWAY_PASSWORD: 'g', NATS_OMS_PASSWORD: 'o', NATS_DMS_PASSWORD: 'old', NATS_WORKER_PASSWORD: 'w', NATS_DEVICE_GATEWAY_PASSWORD: 'd' };
    nats = await OwnNatsServer.start({ config, env: passwords });
    stack = await TestStack.start({
      omsReplicas: 0,
      dmsReplicas: 0,
      env: { NATS_URL: nats.url, NATS_SUBJECT_PREFIX: '' },
      componentEnv: { gateway: { NATS_USER: 'gateway', NATS_PASSWORD: 'g', NATS_INBOX_PREFIX: '_INBOX.gateway' } },
    });
    const dms = await spawnService(stack, 'dms', {
      NATS_USER: 'dms',
      NATS_PASSWORD: 'old',
      NATS_INBOX_PREFIX: '_INBOX.dms',
      NATS_RECONNECT_TIME_WAIT_MS: String(RECONNECT_TIME_WAIT_MS),
    });
    const exited = once(dms.child, 'exit');

    await nats.stop();
    await nats.start({ NATS_DMS_PASSWORD: 'new' });

    await dms.waitForOutput('dms lost a connection for good; exiting so that it is restarted', 15000);
    const [code] = (await exited) as [number | null];
    expect(code).toBe(1);
    const fatal = dms.lines().map((line) => JSON.parse(line) as { msg?: string; checks?: unknown }).find((line) => line.msg?.includes('lost a connection'));
    expect(fatal?.checks).toEqual({ nats: 'failing' });
  });
});
