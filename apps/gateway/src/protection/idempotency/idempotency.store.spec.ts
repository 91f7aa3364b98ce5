import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type IdempotencyRecord, openResponse, type StoredResponse, sealResponse } from './idempotency.store.js';

const record = (key: string, responseKey = randomBytes(32)): IdempotencyRecord => ({ key, index: 'index', responseKey });
const response: StoredResponse = {
  status: 201,
  headers: { location: '/v1/accounts/a/webhooks/w', etag: '"1"' },
  body: '{"id":"w","secret":"whsec_c2VjcmV0"}',
};

describe('stored responses', () => {
  it('are sealed: nothing of the response in the clear, and each seal different', () => {
    const own = record('idempotency:app:1');
    const sealed = sealResponse(own, response);
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain('whsec_');
    expect(Buffer.from(sealed.split('.')[3]!, 'base64url').toString('latin1')).not.toContain('secret');
    expect(sealResponse(own, response)).not.toBe(sealed);
    expect(openResponse(own, sealed)).toEqual(response);
  });

  it('open only with the key of their own idempotency key, in their own record', () => {
    const own = record('idempotency:app:1');
    const sealed = sealResponse(own, response);
    expect(() => openResponse(record(own.key), sealed)).toThrow();
    expect(() => openResponse({ ...own, key: 'idempotency:app:2' }, sealed)).toThrow();
    const [format, iv, tag, ciphertext] = sealed.split('.');
    const flipped = Buffer.from(ciphertext!, 'base64url');
    flipped[0] ^= 1;
    expect(() => openResponse(own, [format, iv, tag, flipped.toString('base64url')].join('.'))).toThrow();
    expect(() => openResponse(own, 'v2.a.b.c')).toThrow();
  });

  it('stored as plain JSON before sealing existed are still replayed', () => {
    expect(openResponse(record('idempotency:app:1'), JSON.stringify(response))).toEqual(response);
  });
});
