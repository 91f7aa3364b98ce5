import { randomBytes } from 'node:crypto';
import { encrypt } from '../../crypto/aes-gcm.js';
import { describe, expect, it } from 'vitest';
import { type IdempotencyRecord, openResponse, type StoredResponse, sealResponse } from './idempotency.store.js';

const record = (key: string, responseKey = randomBytes(32)): IdempotencyRecord => ({ key, index: 'index', sizes: 'sizes', responseKey });
const response: StoredResponse = {
  status: 201,
  headers: { location: '/v1/accounts/a/webhooks/w', etag: '"1"' },
  body: '{"id":"w","secret":"whsec_c2VjcmV0"}',
};

describe('stored responses', () => {
  it('are sealed: nothing of the response in the clear, and each seal different', async () => {
    const own = record('idempotency:app:1');
    const sealed = await sealResponse(own, response);
    expect(sealed).toMatch(/^v2\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain('whsec_');
    expect(Buffer.from(sealed.split('.')[3]!, 'base64url').toString('latin1')).not.toContain('secret');
    expect(await sealResponse(own, response)).not.toBe(sealed);
    expect(await openResponse(own, sealed)).toEqual(response);
  });

  it('are compressed before sealing: a repetitive answer (a list of rejected entries) is stored far smaller', async () => {
    const rejected = Array.from({ length: 5000 }, (_, index) => ({
      index,
      error: { code: 'InvalidParameter', message: `readings.${index}.${'x'.repeat(63)}\u2026 is not a field of a reading.` },
    }));
    const large: StoredResponse = { status: 200, headers: {}, body: JSON.stringify({ accepted: 0, duplicates: 0, rejected }) };
    const own = record('idempotency:app:1');
    const sealed = await sealResponse(own, large);
    expect(sealed.length).toBeLessThan(large.body.length / 5);
    expect(await openResponse(own, sealed)).toEqual(large);
  });

  it('open only with the key of their own idempotency key, in their own record', async () => {
    const own = record('idempotency:app:1');
    const sealed = await sealResponse(own, response);
    await expect(openResponse(record(own.key), sealed)).rejects.toThrow();
    await expect(openResponse({ ...own, key: 'idempotency:app:2' }, sealed)).rejects.toThrow();
    const [format, iv, tag, ciphertext] = sealed.split('.');
    const flipped = Buffer.from(ciphertext!, 'base64url');
    flipped[0] ^= 1;
    await expect(openResponse(own, [format, iv, tag, flipped.toString('base64url')].join('.'))).rejects.toThrow();
    await expect(openResponse(own, 'v3.a.b.c')).rejects.toThrow();
  });

  it('sealed uncompressed (v1), or stored as plain JSON before sealing existed, are still replayed', async () => {
    const own = record('idempotency:app:1');
    const v1 = ['v1', ...encrypt(own.responseKey, Buffer.from(JSON.stringify(response)), own.key)].join('.');
    expect(await openResponse(own, v1)).toEqual(response);
    expect(await openResponse(own, JSON.stringify(response))).toEqual(response);
  });
});
