import { describe, expect, it } from 'vitest';
import { canonicalJson, readIdempotencyKey, requestFingerprint } from './request-fingerprint.js';

describe('request fingerprint', () => {
  it('ignores the order of object keys, not the order of arrays', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
    expect(requestFingerprint('POST', '/x', { a: 1, b: 2 })).toBe(requestFingerprint('POST', '/x', { b: 2, a: 1 }));
    expect(requestFingerprint('POST', '/x', { a: [1, 2] })).not.toBe(requestFingerprint('POST', '/x', { a: [2, 1] }));
  });

  it('tells method, path and body apart', () => {
    const base = requestFingerprint('POST', '/v1/a', { name: 'x' });
    expect(requestFingerprint('POST', '/v1/b', { name: 'x' })).not.toBe(base);
    expect(requestFingerprint('POST', '/v1/a?x=1', { name: 'x' })).not.toBe(base);
    expect(requestFingerprint('PUT', '/v1/a', { name: 'x' })).not.toBe(base);
    expect(requestFingerprint('POST', '/v1/a', { name: 'y' })).not.toBe(base);
    expect(requestFingerprint('POST', '/v1/a', undefined)).not.toBe(requestFingerprint('POST', '/v1/a', {}));
  });
});

describe('readIdempotencyKey', () => {
  it('accepts 1..255 visible ASCII characters', () => {
    expect(readIdempotencyKey(undefined)).toBeUndefined();
    expect(readIdempotencyKey('a')).toBe('a');
    expect(readIdempotencyKey('order-42/retry:1')).toBe('order-42/retry:1');
    expect(readIdempotencyKey('!~')).toBe('!~');
    expect(readIdempotencyKey('k'.repeat(255))).toHaveLength(255);
  });

  it.each([
    ['', 'OutOfRange'],
    ['k'.repeat(256), 'OutOfRange'],
    ['caf\u00e9', 'InvalidFormat'],
    ['tab\there', 'InvalidFormat'],
    ['order 42', 'InvalidFormat'],
    [' ', 'InvalidFormat'],
    ['del\u007f', 'InvalidFormat'],
    ['zero\u200bwidth', 'InvalidFormat'],
  ])('refuses %j as %s', (key, issue) => {
    expect(() => readIdempotencyKey(key)).toThrow(expect.objectContaining({ details: { field: 'Idempotency-Key', issue } }));
  });
});
