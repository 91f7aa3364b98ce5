import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { JWK } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { KeyEnvelope, keyEncryptionKeysSetting } from './key-envelope.js';

const read = keyEncryptionKeysSetting();
const kek = (id: string) => ({ id, key: randomBytes(32) });
const privateJwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }) as JWK;

describe('KeyEnvelope', () => {
  it('seals a private JWK so that only the KEK it names opens it, for the kid it was sealed for', () => {
    const current = kek('k2');
    const envelope = new KeyEnvelope([current, kek('k1')]);
    const sealed = envelope.seal('kid-a', privateJwk);
    expect(sealed.kekId).toBe('k2');
    expect(sealed.sealed).not.toContain(String(privateJwk.d));
    expect(envelope.open('kid-a', sealed)).toEqual(privateJwk);
    // Another row's kid, another KEK under the same id, an unknown KEK id, a changed byte: all refused.
    expect(() => envelope.open('kid-b', sealed)).toThrow();
    expect(() => new KeyEnvelope([kek('k2')]).open('kid-a', sealed)).toThrow();
    expect(() => new KeyEnvelope([kek('k1')]).open('kid-a', sealed)).toThrow(/"k2", which KEY_ENCRYPTION_KEYS does not list/);
    const parts = sealed.sealed.split('.');
    parts[6] = Buffer.from(Buffer.from(parts[6]!, 'base64url').map((byte, index) => (index === 0 ? byte ^ 1 : byte))).toString('base64url');
    expect(() => envelope.open('kid-a', { ...sealed, sealed: parts.join('.') })).toThrow();
  });

  it('opens keys sealed by an older KEK it still lists (rotation)', () => {
    const old = kek('old');
    const sealed = new KeyEnvelope([old]).seal('kid', privateJwk);
    expect(new KeyEnvelope([kek('new'), old]).open('kid', sealed)).toEqual(privateJwk);
  });
});

describe('KEY_ENCRYPTION_KEYS', () => {
  const nodeEnv = process.env.NODE_ENV;
  afterEach(() => {
    process.env.NODE_ENV = nodeEnv;
  });

  it('reads id:base64 entries, the first one current', () => {
    const [a, b] = [randomBytes(32), randomBytes(32)];
    const keys = read('KEY_ENCRYPTION_KEYS', `2026-11:${a.toString('base64')}, 2026-01:${b.toString('base64')}`);
    expect(keys).toEqual([
      { id: '2026-11', key: a },
      { id: '2026-01', key: b },
    ]);
  });

  it('is optional in development and required in production, naming the variable', () => {
    process.env.NODE_ENV = 'development';
    expect(read('KEY_ENCRYPTION_KEYS', undefined)).toEqual([]);
    process.env.NODE_ENV = 'production';
    expect(() => read('KEY_ENCRYPTION_KEYS', undefined)).toThrow(/^Invalid configuration: KEY_ENCRYPTION_KEYS is required in production/);
    expect(() => read('KEY_ENCRYPTION_KEYS', '')).toThrow(/KEY_ENCRYPTION_KEYS is required/);
  });

  it.each([
    ['no id', randomBytes(32).toString('base64'), /KEY_ENCRYPTION_KEYS must list/],
    ['a short key', `a:${randomBytes(16).toString('base64')}`, /key "a" that is not 32 bytes/],
    ['a key that is not base64', `a:${'!'.repeat(44)}`, /key "a" that is not 32 bytes/],
    ['an id twice', `a:${randomBytes(32).toString('base64')},a:${randomBytes(32).toString('base64')}`, /key id "a" twice/],
  ])('refuses %s', (_name, value, message) => {
    expect(() => read('KEY_ENCRYPTION_KEYS', value)).toThrow(message);
  });
});
