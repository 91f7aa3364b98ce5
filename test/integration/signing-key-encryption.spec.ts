import { randomBytes } from 'node:crypto';
import type { JWK } from 'jose';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyEnvelope, keyEncryptionKeysSetting } from '../../apps/gateway/src/auth/key-envelope.js';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { TestStack } from '../support/stack.js';

interface StoredKey {
  kid: string;
  private_jwk: JWK | null;
  kek_id: string | null;
  encrypted_private_jwk: string | null;
  retired_at: Date | null;
}

describe('signing keys at rest', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let database: DataSource;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack);
    database = stack.gateway.get(DataSource);
  });
  afterAll(() => stack?.stop());

  const storedKeys = () => database.query<StoredKey[]>('SELECT kid, private_jwk, kek_id, encrypted_private_jwk, retired_at FROM signing_keys ORDER BY created_at');
  const envelope = (keys: string) => new KeyEnvelope(keyEncryptionKeysSetting()('KEY_ENCRYPTION_KEYS', keys));
  const newKek = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
  const shipments = () => `/v1/accounts/${tenant.accountIds[0]}/shipments`;

  /** A token from the gateway at `baseUrl`, and whether the stack's own gateway accepts it. */
  async function tokenAccepted(baseUrl: string): Promise<number> {
    const response = await stack.request('POST', '/v1/applications/token', {
      baseUrl,
      body: { tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: tenant.applicationSecret },
    });
    expect(response.status, response.text).toBe(200);
    return (await stack.request('GET', shipments(), { token: response.body.accessToken })).status;
  }

  it('stores every private key sealed by the configured key-encryption key, never in plaintext', async () => {
    const keys = await storedKeys();
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      expect(key).toMatchObject({ private_jwk: null, kek_id: 'test' });
      const opened = envelope(stack.env.KEY_ENCRYPTION_KEYS!).open(key.kid, { kekId: 'test', sealed: key.encrypted_private_jwk! });
      expect(opened).toMatchObject({ kty: 'EC', crv: 'P-256', d: expect.any(String) });
      expect(key.encrypted_private_jwk).not.toContain(opened.d);
    }
    expect((await stack.request('GET', shipments(), { token: tenant.token })).status).toBe(200);
  });

  it('seals, when a gateway starts, a key stored in plaintext before a key-encryption key was configured', async () => {
    const [active] = (await storedKeys()).filter((key) => key.retired_at === null);
    const privateJwk = envelope(stack.env.KEY_ENCRYPTION_KEYS!).open(active!.kid, { kekId: 'test', sealed: active!.encrypted_private_jwk! });
    // As the key was stored before this version: in plaintext, and in the old schema's only column.
    await database.query('UPDATE signing_keys SET private_jwk = $1, kek_id = NULL, encrypted_private_jwk = NULL WHERE kid = $2', [privateJwk, active!.kid]);

    const replica = await stack.startGatewayReplica();
    const [resealed] = (await storedKeys()).filter((key) => key.kid === active!.kid);
    expect(resealed).toMatchObject({ private_jwk: null, kek_id: 'test', encrypted_private_jwk: expect.stringMatching(/^v1\./) });
    // The same key still signs: tokens from the replica pass the first gateway, and old tokens still pass.
    expect(await tokenAccepted(replica)).toBe(200);
    expect((await stack.request('GET', shipments(), { token: tenant.token })).status).toBe(200);
  });

  it('rotates the key-encryption key: a new first key reseals every signing key, then the old one can go', async () => {
    const next = newKek('next');
    const both = `${next},${stack.env.KEY_ENCRYPTION_KEYS}`;
    await stack.startGatewayReplica({ KEY_ENCRYPTION_KEYS: both });
    for (const key of await storedKeys()) expect(key).toMatchObject({ private_jwk: null, kek_id: 'next' });

    // Without the old key: still signs with the same key, which the first gateway verifies.
    const onlyNext = await stack.startGatewayReplica({ KEY_ENCRYPTION_KEYS: next });
    expect(await tokenAccepted(onlyNext)).toBe(200);

    // A gateway given only the retired key can verify, but cannot sign, and says why.
    const onlyOld = await stack.startGatewayReplica();
    const refused = await stack.request('POST', '/v1/applications/token', {
      baseUrl: onlyOld,
      body: { tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: tenant.applicationSecret },
    });
    expect(refused.status).toBe(500);
    expect((await stack.request('GET', shipments(), { token: await issueToken(stack, tenant.tenantId, tenant.applicationId, tenant.applicationSecret), baseUrl: onlyOld })).status).toBe(200);
  });
});
