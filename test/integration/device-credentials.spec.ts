import { createHash } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { CredentialProtocol, Subjects } from '@tracking/contracts';
import { NatsRpcClient } from '@tracking/messaging';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevice, devicesPath } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS, UUID_V7 } from '../support/http-assertions.js';
import { TestStack } from '../support/stack.js';

const SECRET = /^dvs_[A-Za-z0-9_-]{43}$/;
const FIELDS = ['createdAt', 'deviceId', 'id', 'identifier', 'lastUsedAt', 'protocol'];
let imeiCounter = 0;
/** A 15-digit IMEI no other test of this run uses. */
const newImei = () => `35${String(process.pid % 100000).padStart(5, '0')}${String(Date.now() % 1e6).padStart(6, '0')}${++imeiCounter}`.slice(0, 15).padEnd(15, '7');

describe('device credentials', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;
  let dms: pg.Client;
  let connection: Awaited<ReturnType<typeof connect>>;
  let rpc: NatsRpcClient;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack, { accounts: 2 });
    other = await createTenant(stack);
    dms = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await dms.connect();
    connection = await connect({ servers: stack.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    rpc = new NatsRpcClient(connection, stack.env.NATS_SUBJECT_PREFIX ?? '', 10_000);
  });
  afterAll(async () => {
    await connection?.close();
    await dms?.end();
    await stack?.stop();
  });

  const device = async (account = 0) => (await createDevice(stack, tenant, { account })).device;
  const credentialsPath = (deviceId: string, account = 0, of = tenant) => `${devicesPath(of, account)}/${deviceId}/credentials`;
  const post = (deviceId: string, body: unknown, token = tenant.token, account = 0) =>
    stack.request('POST', credentialsPath(deviceId, account), { token, body });
  const list = (deviceId: string, query = '', token = tenant.token) => stack.request('GET', `${credentialsPath(deviceId)}${query}`, { token });
  const del = (deviceId: string, credentialId: string, token = tenant.token) =>
    stack.request('DELETE', `${credentialsPath(deviceId)}/${credentialId}`, { token });
  const authenticate = (protocol: CredentialProtocol, identifier: string, secret: string | null) =>
    rpc.call(Subjects.dms.credentials.authenticate, { protocol, identifier, secret });

  describe('POST /devices/{id}/credentials', () => {
    it('creates an Http credential named by the device id, with a dvs_ secret shown once and stored as its SHA-256 only', async () => {
      const { id } = await device();
      const created = await post(id, { protocol: 'Http' });
      expect(created.status, created.text).toBe(201);
      expect(created.headers.get('cache-control')).toBe('no-store');
      expect(Object.keys(created.body).sort()).toEqual([...FIELDS, 'secret'].sort());
      expect(created.body).toMatchObject({ deviceId: id, protocol: 'Http', identifier: id, lastUsedAt: null });
      expect(created.body.id).toMatch(UUID_V7);
      expect(created.body.createdAt).toMatch(TIMESTAMP_MS);
      expect(created.body.secret).toMatch(SECRET);

      const row = (await dms.query('SELECT * FROM device_credentials WHERE id = $1', [created.body.id])).rows[0];
      expect(row.secret_digest).toEqual(createHash('sha256').update(created.body.secret).digest());
      expect(JSON.stringify(row)).not.toContain(created.body.secret.slice(4));

      const listed = await list(id);
      expect(listed.status).toBe(200);
      const { secret: _secret, ...shown } = created.body;
      expect(listed.body).toEqual({ credentials: [shown], metadata: { nextCursor: null } });
    });

    it('takes an Mqtt identifier of its own, and a Teltonika IMEI without any secret', async () => {
      const { id } = await device();
      const mqtt = await post(id, { protocol: 'Mqtt', identifier: 'truck-17.a_B' + id.slice(0, 8) });
      expect(mqtt.status, mqtt.text).toBe(201);
      expect(mqtt.body.secret).toMatch(SECRET);
      const imei = newImei();
      const teltonika = await post(id, { protocol: 'Teltonika', identifier: imei });
      expect(teltonika.status, teltonika.text).toBe(201);
      expect(Object.keys(teltonika.body).sort()).toEqual(FIELDS);
      expect(teltonika.body).toMatchObject({ protocol: 'Teltonika', identifier: imei });
    });

    it.each([
      ['no protocol', {}, 'protocol', 'Required'],
      ['an unknown protocol', { protocol: 'Coap' }, 'protocol', 'InvalidFormat'],
      ['a numeric identifier', { protocol: 'Http', identifier: 17 }, 'identifier', 'InvalidFormat'],
      ['an identifier with a space', { protocol: 'Mqtt', identifier: 'truck 17' }, 'identifier', 'InvalidFormat'],
      ['an identifier with a slash (an MQTT topic level)', { protocol: 'Mqtt', identifier: 'a/b' }, 'identifier', 'InvalidFormat'],
      ['an identifier with a wildcard', { protocol: 'Mqtt', identifier: 'a+' }, 'identifier', 'InvalidFormat'],
      ['an empty identifier', { protocol: 'Http', identifier: '' }, 'identifier', 'OutOfRange'],
      ['an identifier of 65 characters', { protocol: 'Http', identifier: 'x'.repeat(65) }, 'identifier', 'OutOfRange'],
      ['a Teltonika credential without an IMEI', { protocol: 'Teltonika' }, 'identifier', 'Required'],
      ['a Teltonika IMEI of 14 digits', { protocol: 'Teltonika', identifier: '35620906170012' }, 'identifier', 'InvalidFormat'],
      ['a Teltonika IMEI with a letter', { protocol: 'Teltonika', identifier: '35620906170012a' }, 'identifier', 'InvalidFormat'],
      ['an unknown field', { protocol: 'Http', secret: 'dvs_mine' }, 'secret', 'UnknownField'],
    ])('refuses %s with 400', async (_name, body, field, issue) => {
      const { id } = await device();
      expectInvalidParameter(await post(id, body), field, issue);
      expect((await list(id)).body.credentials).toEqual([]);
    });

    it('lets one device share an identifier among its credentials (rotation) but no other device take it: 409 DuplicateIdentifier, naming nobody', async () => {
      const first = await device();
      const second = await device(1);
      const identifier = `shared-${first.id.slice(0, 8)}`;
      expect((await post(first.id, { protocol: 'Mqtt', identifier })).status).toBe(201);
      expect((await post(first.id, { protocol: 'Mqtt', identifier })).status).toBe(201);
      const taken = await post(second.id, { protocol: 'Mqtt', identifier }, tenant.token, 1);
      expectError(taken, 409, 'DuplicateIdentifier');
      expect(taken.text).not.toContain(first.id);
      // Another tenant cannot take it either: identifiers are system-wide.
      const foreign = (await createDevice(stack, other)).device;
      expectError(await stack.request('POST', credentialsPath(foreign.id, 0, other), { token: other.token, body: { protocol: 'Mqtt', identifier } }), 409, 'DuplicateIdentifier');
      // Per protocol: the same text is free for Http.
      expect((await post(second.id, { protocol: 'Http', identifier }, tenant.token, 1)).status).toBe(201);
    });

    it('gives an IMEI one credential, even on the same device', async () => {
      const first = await device();
      const second = await device();
      const imei = newImei();
      expect((await post(first.id, { protocol: 'Teltonika', identifier: imei })).status).toBe(201);
      expectError(await post(first.id, { protocol: 'Teltonika', identifier: imei }), 409, 'DuplicateIdentifier');
      expectError(await post(second.id, { protocol: 'Teltonika', identifier: imei }), 409, 'DuplicateIdentifier');
    });

    it('lets exactly one of two devices win an identifier created concurrently', async () => {
      const devices = await Promise.all([device(), device(), device(), device()]);
      const identifier = `race-${devices[0]!.id.slice(0, 8)}`;
      const answers = await Promise.all(devices.map((d) => post(d.id, { protocol: 'Http', identifier })));
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409]);
    });

    it('holds at most 5 credentials per device (409 CredentialLimitReached), also under concurrent creates; a delete makes room', async () => {
      const { id } = await device();
      const answers = await Promise.all(Array.from({ length: 8 }, () => post(id, { protocol: 'Http' })));
      expect(answers.filter((a) => a.status === 201)).toHaveLength(5);
      for (const refused of answers.filter((a) => a.status !== 201)) expectError(refused, 409, 'CredentialLimitReached');
      const victim = answers.find((a) => a.status === 201)!.body.id;
      expect((await del(id, victim)).status).toBe(204);
      expect((await post(id, { protocol: 'Mqtt' })).status).toBe(201);
      expectError(await post(id, { protocol: 'Mqtt' }), 409, 'CredentialLimitReached');
    });

    it('refuses a retired device with 409 DeviceRetired, and still lists and deletes its credentials', async () => {
      const { id } = await device();
      const kept = await post(id, { protocol: 'Http' });
      expect((await stack.request('POST', `${devicesPath(tenant)}/${id}/retire`, { token: tenant.token })).status).toBe(204);
      expectError(await post(id, { protocol: 'Http' }), 409, 'DeviceRetired');
      expect((await list(id)).body.credentials.map((c: { id: string }) => c.id)).toEqual([kept.body.id]);
      expect((await del(id, kept.body.id)).status).toBe(204);
    });

    it("answers 404 DeviceNotExists for another account's or tenant's device, an unknown id and a non-UUID, on every route", async () => {
      const mine = await device(1);
      const theirs = (await createDevice(stack, other)).device;
      const credential = (await stack.request('POST', credentialsPath(theirs.id, 0, other), { token: other.token, body: { protocol: 'Http' } })).body;
      for (const id of [mine.id, theirs.id, '0190a4a0-0000-7000-8000-00000000dead', 'not-a-uuid']) {
        expectError(await post(id, { protocol: 'Http' }), 404, 'DeviceNotExists');
        expectError(await list(id), 404, 'DeviceNotExists');
        expectError(await del(id, credential.id), 404, 'DeviceNotExists');
      }
      // Still there for its owner.
      expect((await stack.request('GET', credentialsPath(theirs.id, 0, other), { token: other.token })).body.credentials).toHaveLength(1);
    });
  });

  describe('DELETE /devices/{id}/credentials/{credentialId}', () => {
    it('answers 204, then 404 CredentialNotExists; an unknown, malformed or other device\'s credential id is 404 CredentialNotExists', async () => {
      const a = await device();
      const b = await device();
      const credential = (await post(a.id, { protocol: 'Http' })).body;
      const foreign = (await post(b.id, { protocol: 'Http' })).body;
      expectError(await del(a.id, foreign.id), 404, 'CredentialNotExists');
      expectError(await del(a.id, 'not-a-uuid'), 404, 'CredentialNotExists');
      expectError(await del(a.id, '0190a4a0-0000-7000-8000-00000000beef'), 404, 'CredentialNotExists');
      expect((await del(a.id, credential.id)).status).toBe(204);
      expectError(await del(a.id, credential.id), 404, 'CredentialNotExists');
      expect((await list(b.id)).body.credentials).toHaveLength(1);
    });
  });

  describe('roles', () => {
    it('lets a Viewer read credentials without secrets, but neither create nor delete them; Ingest has no access', async () => {
      const admin = await createTenant(stack);
      // The viewer's own tenant, with an admin application to set things up.
      const viewerOfAdmin = await stack.identity.createApplication(admin.tenantId, 'Viewer', 'Viewer', '*');
      const ingestOfAdmin = await stack.identity.createApplication(admin.tenantId, 'Ingest', 'Ingest', '*');
      const tokenOf = async (app: { applicationId: string; applicationSecret: string }) =>
        (await stack.request('POST', '/v1/applications/token', { body: { tenantId: admin.tenantId, ...app } })).body.accessToken as string;
      const viewerToken = await tokenOf(viewerOfAdmin);
      const ingestToken = await tokenOf(ingestOfAdmin);
      const d = (await createDevice(stack, admin)).device;
      const path = credentialsPath(d.id, 0, admin);
      const created = (await stack.request('POST', path, { token: admin.token, body: { protocol: 'Http' } })).body;

      const read = await stack.request('GET', path, { token: viewerToken });
      expect(read.status, read.text).toBe(200);
      expect(Object.keys(read.body.credentials[0]).sort()).toEqual(FIELDS);
      expectError(await stack.request('POST', path, { token: viewerToken, body: { protocol: 'Http' } }), 403, 'Forbidden');
      expectError(await stack.request('DELETE', `${path}/${created.id}`, { token: viewerToken }), 403, 'Forbidden');
      expectError(await stack.request('GET', path, { token: ingestToken }), 403, 'Forbidden');
      expectError(await stack.request('POST', path, { token: ingestToken, body: { protocol: 'Http' } }), 403, 'Forbidden');
    });
  });

  describe('GET /devices/{id}/credentials paging', () => {
    it('pages oldest first with limit and cursor, counts with includeTotal, and binds the cursor to the device', async () => {
      const { id } = await device();
      const created: string[] = [];
      for (let i = 0; i < 5; i++) created.push((await post(id, { protocol: 'Http' })).body.id);
      const first = await list(id, '?limit=2&includeTotal=true');
      expect(first.body.credentials.map((c: { id: string }) => c.id)).toEqual(created.slice(0, 2));
      expect(first.body.metadata).toEqual({ nextCursor: expect.any(String), total: 5 });
      const second = await list(id, `?limit=3&cursor=${encodeURIComponent(first.body.metadata.nextCursor)}`);
      expect(second.body.credentials.map((c: { id: string }) => c.id)).toEqual(created.slice(2));
      expect(second.body.metadata).toEqual({ nextCursor: null });
      const elsewhere = await device();
      expectInvalidParameter(await list(elsewhere.id, `?cursor=${encodeURIComponent(first.body.metadata.nextCursor)}`), 'cursor', 'InvalidCursor');
      expectInvalidParameter(await list(id, '?limit=0'), 'limit', 'OutOfRange');
      expectInvalidParameter(await list(id, '?limit=x'), 'limit', 'InvalidFormat');
      expectInvalidParameter(await list(id, '?protocol=Http'), 'protocol', 'UnknownField');
    });
  });

  describe('authentication by the device gateway (dms.credentials.authenticate, dms.credentials.live)', () => {
    it('knows a live credential by identifier and secret, records its use, and refuses a wrong secret', async () => {
      const d = await device();
      const created = (await post(d.id, { protocol: 'Http' })).body;
      expect(await authenticate(CredentialProtocol.Http, d.id, `${created.secret}x`)).toBeNull();
      expect(await authenticate(CredentialProtocol.Http, d.id, null)).toBeNull();
      expect(await authenticate(CredentialProtocol.Mqtt, d.id, created.secret)).toBeNull();
      expect(await authenticate(CredentialProtocol.Http, d.id, created.secret)).toEqual({
        credentialId: created.id,
        deviceId: d.id,
        tenantId: tenant.tenantId,
        accountId: tenant.accountIds[0],
        protocol: 'Http',
        identifier: d.id,
      });
      // HTTP requests may carry the secret alone (a bearer header, a /t/{secret}/ URL): it names the credential.
      expect((await authenticate(CredentialProtocol.Http, '', created.secret))?.credentialId).toBe(created.id);
      const shown = (await list(d.id)).body.credentials[0];
      expect(shown.lastUsedAt).toMatch(TIMESTAMP_MS);
      // At most once a minute: a second use moves nothing.
      await authenticate(CredentialProtocol.Http, d.id, created.secret);
      expect((await list(d.id)).body.credentials[0].lastUsedAt).toBe(shown.lastUsedAt);
    });

    it('tells each of several credentials sharing an identifier by its own secret', async () => {
      const d = await device();
      const identifier = `rot-${d.id.slice(0, 8)}`;
      const old = (await post(d.id, { protocol: 'Mqtt', identifier })).body;
      const fresh = (await post(d.id, { protocol: 'Mqtt', identifier })).body;
      expect((await authenticate(CredentialProtocol.Mqtt, identifier, old.secret))?.credentialId).toBe(old.id);
      expect((await authenticate(CredentialProtocol.Mqtt, identifier, fresh.secret))?.credentialId).toBe(fresh.id);
      expect((await del(d.id, old.id)).status).toBe(204);
      expect(await authenticate(CredentialProtocol.Mqtt, identifier, old.secret)).toBeNull();
      expect((await authenticate(CredentialProtocol.Mqtt, identifier, fresh.secret))?.credentialId).toBe(fresh.id);
    });

    it('knows a Teltonika device by its IMEI alone, never with a secret', async () => {
      const d = await device();
      const imei = newImei();
      const created = (await post(d.id, { protocol: 'Teltonika', identifier: imei })).body;
      expect((await authenticate(CredentialProtocol.Teltonika, imei, null))?.credentialId).toBe(created.id);
      expect(await authenticate(CredentialProtocol.Teltonika, imei, 'anything')).toBeNull();
      expect(await authenticate(CredentialProtocol.Teltonika, newImei(), null)).toBeNull();
    });

    it('refuses at once a deleted credential, one of a retired device and one of a deleted device, and says which are no longer live', async () => {
      const [deleted, retired, gone, kept] = await Promise.all([device(), device(), device(), device()]);
      const credentials = await Promise.all([deleted, retired, gone, kept].map(async (d) => (await post(d.id, { protocol: 'Http' })).body));
      const ids = credentials.map((c) => c.id);
      expect((await rpc.call(Subjects.dms.credentials.live, { credentialIds: ids })).live.sort()).toEqual([...ids].sort());

      expect((await del(deleted.id, credentials[0].id)).status).toBe(204);
      expect((await stack.request('POST', `${devicesPath(tenant)}/${retired.id}/retire`, { token: tenant.token })).status).toBe(204);
      expect((await stack.request('DELETE', `${devicesPath(tenant)}/${gone.id}`, { token: tenant.token })).status).toBe(204);

      for (const [i, d] of [deleted, retired, gone].entries()) expect(await authenticate(CredentialProtocol.Http, d.id, credentials[i].secret)).toBeNull();
      expect((await authenticate(CredentialProtocol.Http, kept.id, credentials[3].secret))?.credentialId).toBe(credentials[3].id);
      const live = await rpc.call(Subjects.dms.credentials.live, { credentialIds: [...ids, 'not-a-uuid'] });
      expect(live.live).toEqual([credentials[3].id]);
    });
  });
});
