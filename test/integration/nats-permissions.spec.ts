import { fileURLToPath } from 'node:url';
import { connect, type NatsConnection, type Status } from '@nats-io/transport-node';
import { CredentialProtocol, Subjects } from '@tracking/contracts';
import { NatsRpcClient } from '@tracking/messaging';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDevices, startBulkRetire, waitForOperation } from '../factories/bulk.factory.js';
import { createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { waitUntil } from '../support/ops-endpoints.js';
import { OwnNatsServer } from '../support/nats-server.js';
import { type Component, TestStack } from '../support/stack.js';

/**
 * The NATS users and permissions that docker-compose and the dev overlay give their NATS server (the
 * very file), on a nats-server of the test's own: each component connects as its own user, and a
 * process holding one component's credentials can do only what that component does.
 */
const CONFIG = fileURLToPath(new URL('../../deploy/k8s/overlays/dev/nats-server.conf', import.meta.url));
const COMPONENTS: Component[] = ['gateway', 'oms', 'dms', 'worker'];
const password = (component: Component) => `${component}-test-password`;
const credentialsOf = (component: Component) => ({
  NATS_USER: component,
  NATS_PASSWORD: password(component),
  NATS_INBOX_PREFIX: `_INBOX.${component}`,
});

const DEVICE_GATEWAY_PASSWORD = 'device-gateway-test-password';

let nats: OwnNatsServer;
let stack: TestStack;
let tenant: TestTenant;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  nats = await OwnNatsServer.start({
    config: CONFIG,
    env: {
      ...Object.fromEntries(COMPONENTS.map((component) => [`NATS_${component.toUpperCase()}_PASSWORD`, password(component)])),
      NATS_DEVICE_GATEWAY_PASSWORD: DEVICE_GATEWAY_PASSWORD,
    },
  });
  stack = await TestStack.start({
    workers: 1,
    // The subjects of the configuration file are those without a prefix; this server is the test's alone.
    env: { NATS_URL: nats.url, NATS_SUBJECT_PREFIX: '' },
    componentEnv: Object.fromEntries(COMPONENTS.map((component) => [component, credentialsOf(component)])),
  });
  tenant = await createTenant(stack);
});

afterAll(async () => {
  await Promise.all(connections.splice(0).map((connection) => connection.close()));
  await stack?.stop();
  await nats?.stop();
});

/** A connection as `component`, with the errors the server reports on it. */
async function connectAs(component: Component | 'device-gateway'): Promise<{ connection: NatsConnection; errors: Error[] }> {
  const pass = component === 'device-gateway' ? DEVICE_GATEWAY_PASSWORD : password(component);
  const connection = await connect({ servers: nats.url, user: component, pass, inboxPrefix: `_INBOX.${component}` });
  connections.push(connection);
  const errors: Error[] = [];
  void (async () => {
    for await (const status of connection.status() as AsyncIterable<Status>) if (status.type === 'error') errors.push(status.error);
  })();
  return { connection, errors };
}

describe('NATS users and permissions', { timeout: 60000 }, () => {
  it('serve the API with each component as its own user: gateway to OMS and DMS, OMS to DMS, worker to DMS', async () => {
    const account = tenant.accountIds[0];
    const shipment = await createShipment(stack, tenant);
    const set = (await createSet(stack, tenant, shipment.id)).set;
    const device = (await createDevice(stack, tenant)).device;
    const assigned = await stack.request('PUT', `/v1/accounts/${account}/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`, {
      token: tenant.token,
    });
    expect(assigned.status, assigned.text).toBeLessThan(300);
    const deviceIds = await seedDevices(stack, tenant, 3);
    const operation = await waitForOperation(stack, tenant, await startBulkRetire(stack, tenant, deviceIds));
    expect(operation).toMatchObject({ status: 'Succeeded', progress: { total: 3, succeeded: 3, failed: 0 } });
    const ready = await stack.request('GET', '/health/ready');
    expect([ready.status, ready.body.checks]).toEqual([200, expect.objectContaining({ nats: 'ok', oms: 'ok', dms: 'ok' })]);
  });

  it('refuse a connection without credentials or with a wrong password', async () => {
    await expect(connect({ servers: nats.url, maxReconnectAttempts: 0 })).rejects.toThrow(/authorization violation/i);
    await expect(connect({ servers: nats.url, user: 'gateway', pass: 'wrong', maxReconnectAttempts: 0 })).rejects.toThrow(/authorization violation/i);
  });

  it("let the DMS's credentials request no OMS subject, and no component read another's requests or replies", async () => {
    const { connection: dms, errors } = await connectAs('dms');
    const request = dms.request('oms.ping', JSON.stringify({ pattern: 'oms.ping', data: {}, id: '1' }), { timeout: 2000 });
    await expect(request).rejects.toThrow();
    await waitUntil(() => errors.some((error) => /permissions violation for publish to "oms\.ping"/i.test(error.message)), 'the server refuses the publish');

    const refusedSubscriptions: [Component, string][] = [
      ['dms', 'oms.>'],
      ['dms', '_INBOX.gateway.>'],
      ['worker', 'dms.>'],
      ['gateway', 'oms.>'],
    ];
    for (const [component, subject] of refusedSubscriptions) {
      const { connection } = await connectAs(component);
      const subscription = connection.subscribe(subject);
      const ended = await subscription.closed;
      expect([component, subject, String(ended)]).toEqual([component, subject, expect.stringMatching(/permissions violation for subscription/i)]);
    }
  });

  it("let the device gateway ask the DMS its three device questions and nothing else", async () => {
    const { connection, errors } = await connectAs('device-gateway');
    const rpc = new NatsRpcClient(connection, '', 5000, undefined, '_INBOX.device-gateway');
    expect(await rpc.call(Subjects.dms.credentials.live, { credentialIds: [] })).toEqual({ live: [] });
    expect(await rpc.call(Subjects.dms.credentials.authenticate, { protocol: CredentialProtocol.Http, identifier: '', secret: 'dvs_unknown' })).toBeNull();
    expect(await rpc.call(Subjects.dms.readings.ingestFromDevices, { submissions: [] })).toEqual({ outcomes: [] });
    await expect(rpc.call(Subjects.dms.devices.list, { tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, page: { limit: 1, includeTotal: false }, filters: {} })).rejects.toThrow();
    await waitUntil(() => errors.some((error) => /permissions violation for publish to "dms\.devices\.list"/i.test(error.message)), 'the server refuses the publish');
    for (const subject of ['dms.>', '_INBOX.gateway.>']) {
      const ended = await connection.subscribe(subject).closed;
      expect([subject, String(ended)]).toEqual([subject, expect.stringMatching(/permissions violation for subscription/i)]);
    }
  });
});
