import { Subjects } from '@tracking/contracts';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeviceIdentity } from '../../apps/device-gateway/src/ingest/device-sink.js';
import { createDevice, devicesPath } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { startTestDeviceGateway, type TestDeviceGateway } from '../support/device-gateway.js';
import { waitUntil } from '../support/ops-endpoints.js';
import { killServices, spawnService } from '../support/processes.js';
import { TestStack } from '../support/stack.js';

/**
 * The device gateway's core, below any protocol: the authenticator and the sink against the real DMS,
 * NATS and Redis. What every listener relies on: one DMS call for many devices, each device's own
 * outcome, acknowledgement only after the commit, revocation, shutdown, and a crash between the commit
 * and the acknowledgement.
 */
describe('device gateway: authenticator and sink', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;
  let devices: TestDeviceGateway;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack);
    other = await createTenant(stack);
    // A long wait, so that submits made together surely share a batch.
    devices = await startTestDeviceGateway(stack, { DEVICE_BATCH_MAX_WAIT_MS: '300', DEVICE_REVOCATION_CHECK_MS: '200' });
  });
  afterAll(async () => {
    await killServices();
    await devices?.stop();
    await stack?.stop();
  });

  const ago = (seconds: number) => new Date(Math.floor(Date.now() / 1000) * 1000 - seconds * 1000).toISOString();
  async function identity(of = tenant, protocol: 'Http' | 'Mqtt' = 'Mqtt'): Promise<DeviceIdentity & { secret: string }> {
    const device = (await createDevice(stack, of)).device;
    const created = await stack.request('POST', `${devicesPath(of)}/${device.id}/credentials`, { token: of.token, body: { protocol } });
    expect(created.status, created.text).toBe(201);
    const found = await devices.gateway.authenticator.authenticate(protocol, created.body.identifier, created.body.secret);
    expect(found).toMatchObject({ deviceId: device.id, credentialId: created.body.id });
    return { ...found!, secret: created.body.secret };
  }
  const stored = async (deviceId: string, of = tenant) =>
    (await stack.request('GET', `${devicesPath(of)}/${deviceId}/readings`, { token: of.token })).body.readings as { recordedAt: string }[];
  const dmsCalls = async () => {
    const text = await devices.metrics.registry.metrics();
    const match = new RegExp(`nats_rpc_client_duration_seconds_count\\{[^}]*subject="${Subjects.dms.readings.ingestFromDevices.replace(/\./g, '\\.')}"[^}]*\\} (\\d+)`).exec(text);
    return Number(match?.[1] ?? 0);
  };

  it('gathers many devices of several tenants into one DMS call and answers each with its own outcome', async () => {
    const ids = await Promise.all([identity(), identity(), identity(other), identity(other), identity()]);
    const before = await dmsCalls();
    const results = await Promise.all(
      ids.map((id, i) =>
        devices.gateway.sink.submit(id, [
          { recordedAt: ago(60), temperatureC: i },
          // The last device sends one bad entry beside a good one: half its message is refused.
          ...(i === 4 ? [{ recordedAt: ago(59), temperatureC: 1000 }] : []),
        ]),
      ),
    );
    expect(await dmsCalls()).toBe(before + 1);
    expect(results.slice(0, 4)).toEqual(ids.slice(0, 4).map(() => ({ kind: 'committed', outcome: { accepted: 1, duplicates: 0, unassigned: 1, rejected: [] } })));
    expect(results[4]).toEqual({
      kind: 'committed',
      outcome: { accepted: 1, duplicates: 0, unassigned: 1, rejected: [{ index: 1, error: expect.objectContaining({ details: { field: 'readings.1.temperatureC', issue: 'OutOfRange' } }) }] },
    });
    for (const [i, id] of ids.entries()) expect(await stored(id.deviceId, i === 2 || i === 3 ? other : tenant)).toHaveLength(1);
  });

  it('answers revoked for a deleted credential and a retired device in the same batch as others that commit', async () => {
    const [deleted, retired, kept] = await Promise.all([identity(), identity(), identity()]);
    expect((await stack.request('DELETE', `${devicesPath(tenant)}/${deleted.deviceId}/credentials/${deleted.credentialId}`, { token: tenant.token })).status).toBe(204);
    expect((await stack.request('POST', `${devicesPath(tenant)}/${retired.deviceId}/retire`, { token: tenant.token })).status).toBe(204);
    const results = await Promise.all([deleted, retired, kept].map((id) => devices.gateway.sink.submit(id, [{ recordedAt: ago(30), shockG: 2 }])));
    expect(results.map((result) => result.kind)).toEqual(['revoked', 'revoked', 'committed']);
    expect(await stored(deleted.deviceId)).toEqual([]);
    expect(await stored(retired.deviceId)).toEqual([]);
    expect(await stored(kept.deviceId)).toHaveLength(1);
  });

  it('judges without the DMS what cannot be stored, and counts a resend as a duplicate', async () => {
    const id = await identity();
    const before = await dmsCalls();
    const garbage = await devices.gateway.sink.submit(id, [42, { recordedAt: 'now' }]);
    expect(garbage).toMatchObject({ kind: 'committed', outcome: { accepted: 0, duplicates: 0, rejected: [{ index: 0 }, { index: 1 }] } });
    expect(await dmsCalls()).toBe(before);
    const reading = { recordedAt: ago(10), humidityPercent: 50 };
    expect(await devices.gateway.sink.submit(id, [reading])).toMatchObject({ kind: 'committed', outcome: { accepted: 1 } });
    expect(await devices.gateway.sink.submit(id, [reading])).toMatchObject({ kind: 'committed', outcome: { accepted: 0, duplicates: 1 } });
  });

  it('tells a watcher within the revocation check that its credential was deleted or its device retired or deleted', async () => {
    const [deleted, retired, gone, kept] = await Promise.all([identity(), identity(), identity(), identity()]);
    const revoked: string[] = [];
    const stops = [deleted, retired, gone, kept].map((id) => devices.gateway.authenticator.watch(id, () => revoked.push(id.credentialId)));
    expect((await stack.request('DELETE', `${devicesPath(tenant)}/${deleted.deviceId}/credentials/${deleted.credentialId}`, { token: tenant.token })).status).toBe(204);
    expect((await stack.request('POST', `${devicesPath(tenant)}/${retired.deviceId}/retire`, { token: tenant.token })).status).toBe(204);
    expect((await stack.request('DELETE', `${devicesPath(tenant)}/${gone.deviceId}`, { token: tenant.token })).status).toBe(204);
    await waitUntil(() => revoked.length === 3, 'the three revocations are seen');
    expect(revoked.sort()).toEqual([deleted.credentialId, retired.credentialId, gone.credentialId].sort());
    // Once each, and never for the live one.
    await devices.gateway.authenticator.checkWatched();
    expect(revoked).toHaveLength(3);
    for (const stop of stops) stop();
  });

  it('answers unavailable, not committed, when the DMS does not answer, and stores the resend once it is back', async () => {
    const id = await identity();
    const reading = { recordedAt: ago(5), pressureHpa: 1000 };
    await stack.stopDmsReplicas();
    try {
      expect(await devices.gateway.sink.submit(id, [reading])).toEqual({ kind: 'unavailable' });
    } finally {
      await stack.startDmsReplica();
    }
    expect(await devices.gateway.sink.submit(id, [reading])).toMatchObject({ kind: 'committed', outcome: { accepted: 1 } });
  });

  it('finishes the batches it holds when it shuts down, then refuses new submits', async () => {
    const own = await startTestDeviceGateway(stack, { DEVICE_BATCH_MAX_WAIT_MS: '5000' });
    const device = (await createDevice(stack, tenant)).device;
    const created = (await stack.request('POST', `${devicesPath(tenant)}/${device.id}/credentials`, { token: tenant.token, body: { protocol: 'Http' } })).body;
    const id = (await own.gateway.authenticator.authenticate('Http', '', created.secret))!;
    const pending = own.gateway.sink.submit(id, [{ recordedAt: ago(3), lightLux: 5 }]);
    await own.stop();
    expect(await pending).toMatchObject({ kind: 'committed', outcome: { accepted: 1 } });
    expect(await own.gateway.sink.submit(id, [{ recordedAt: ago(2), lightLux: 5 }])).toEqual({ kind: 'unavailable' });
    expect(await stored(device.id)).toHaveLength(1);
  });

  it('on SIGTERM answers the request it holds once its batch is committed, refuses new connections, and exits 0', async () => {
    const device = (await createDevice(stack, tenant)).device;
    const created = (await stack.request('POST', `${devicesPath(tenant)}/${device.id}/credentials`, { token: tenant.token, body: { protocol: 'Http' } })).body;
    // A batch waits 3 s for company: the signal comes while the request is held.
    const child = await spawnService(stack, 'device-gateway', {
      DEVICE_HTTP_PORT: '0',
      DEVICE_MQTT_PORT: '0',
      DEVICE_MQTTS_PORT: '0',
      DEVICE_TELTONIKA_PORT: '0',
      DEVICE_BATCH_MAX_WAIT_MS: '3000',
    });
    const ready = child.lines().find((line) => line.includes('"msg":"device-gateway started"'))!;
    const http = (JSON.parse(ready) as { listeners: { name: string; addresses: string[] }[] }).listeners.find((l) => l.name === 'http')!.addresses[0]!;
    const held = fetch(`${http}/v1/readings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${created.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ readings: [{ recordedAt: ago(1), temperatureC: 2 }] }),
    });
    // Authenticated: its readings are in the sink's batch from then on.
    await waitUntil(
      async () => (await fetch(`${child.opsUrl}/metrics`).then((r) => r.text())).includes('subject="dms.credentials.authenticate",outcome="ok"'),
      'the request is authenticated and held',
    );
    const exited = child.terminate();
    const answer = await held;
    expect([answer.status, await answer.json()]).toEqual([200, { accepted: 1, duplicates: 0, unassigned: 1, rejected: [] }]);
    expect(await exited).toBe(0);
    await expect(fetch(`${http}/v1/readings`, { method: 'POST' })).rejects.toThrow();
    expect(await stored(device.id)).toHaveLength(1);
  });

  it('killed between the DMS commit and the acknowledgement: the device got no answer, and its resend is a duplicate, not a loss', async () => {
    const device = (await createDevice(stack, tenant)).device;
    const created = (await stack.request('POST', `${devicesPath(tenant)}/${device.id}/credentials`, { token: tenant.token, body: { protocol: 'Http' } })).body;
    const child = await spawnService(stack, 'device-gateway', { DEVICE_HTTP_PORT: '0', DEVICE_MQTT_PORT: '0', DEVICE_MQTTS_PORT: '0', DEVICE_TELTONIKA_PORT: '0' });
    const ready = child.lines().find((line) => line.includes('"msg":"device-gateway started"'))!;
    const http = (JSON.parse(ready) as { listeners: { name: string; addresses: string[] }[] }).listeners.find((l) => l.name === 'http')!.addresses[0]!;

    // A spy on the DMS's subject sees each batch as the DMS gets it: the device gateway is killed then, and
    // the DMS commits a batch whose answer nobody receives.
    const nats = await connect({ servers: stack.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    const spy = nats.subscribe(`${stack.env.NATS_SUBJECT_PREFIX}${Subjects.dms.readings.ingestFromDevices}`, { max: 1 });
    const killed = (async () => {
      for await (const _message of spy) await child.kill9();
    })();
    const body = { readings: [{ recordedAt: ago(1), temperatureC: 7.25 }] };
    const send = (base: string) =>
      fetch(`${base}/v1/readings`, { method: 'POST', headers: { authorization: `Bearer ${created.secret}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await expect(send(http)).rejects.toThrow();
    await killed;
    await nats.close();
    await waitUntil(async () => (await stored(device.id)).length === 1, 'the batch the DMS got is committed');

    // The device resends to another replica: stored once.
    const resend = await send(devices.address('http'));
    expect([resend.status, await resend.json()]).toEqual([200, { accepted: 0, duplicates: 1, unassigned: 0, rejected: [] }]);
    expect(await stored(device.id)).toHaveLength(1);
  });
});
