import { describe, expect, it } from 'vitest';
import { DECOY_HASH, generateSecret, hashSecret, verifySecret } from './secret-hash.js';

describe('secret hashing', () => {
  it('verifies the secret it hashed', async () => {
    const secret = generateSecret();
    expect(await verifySecret(secret, await hashSecret(secret))).toBe(true);
  });

  it('rejects a wrong secret', async () => {
    const stored = await hashSecret('correct horse battery staple');
    expect(await verifySecret('correct horse battery stapler', stored)).toBe(false);
    expect(await verifySecret('', stored)).toBe(false);
  });

  it('stores scrypt with its parameters and never the secret', async () => {
    const secret = generateSecret();
    const stored = await hashSecret(secret);
    expect(stored).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(stored).not.toContain(secret);
  });

  it('salts every hash: the same secret hashes differently and both verify', async () => {
    const [first, second] = [await hashSecret('same'), await hashSecret('same')];
    expect(first.split('$')[4]).not.toBe(second.split('$')[4]);
    expect(first).not.toBe(second);
    expect(await verifySecret('same', first)).toBe(true);
    expect(await verifySecret('same', second)).toBe(true);
  });

  it('generates 32 random bytes as base64url, different each time', () => {
    const secrets = new Set(Array.from({ length: 100 }, generateSecret));
    expect(secrets.size).toBe(100);
    for (const secret of secrets) expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('matches no secret with the decoy hash', async () => {
    expect(await verifySecret('', DECOY_HASH)).toBe(false);
    expect(await verifySecret(generateSecret(), DECOY_HASH)).toBe(false);
  });

  describe('a malformed stored hash is false, never an error or a match', () => {
    const salt = Buffer.alloc(16, 1).toString('base64url');
    const hash = Buffer.alloc(32, 2).toString('base64url');
    it.each([
      ['empty', ''],
      ['another scheme', `argon2id$16384$8$1$${salt}$${hash}`],
      ['missing parts', `scrypt$16384$8$1$${salt}`],
      ['extra parts', `scrypt$16384$8$1$${salt}$${hash}$x`],
      ['a non-numeric N', `scrypt$abc$8$1$${salt}$${hash}`],
      ['a zero r', `scrypt$16384$0$1$${salt}$${hash}`],
      ['a negative p', `scrypt$16384$8$-1$${salt}$${hash}`],
      ['an N that is not a power of two', `scrypt$1000$8$1$${salt}$${hash}`],
      ['a hash that decodes to nothing', 'scrypt$16384$8$1$' + salt + '$!!!!'],
      ['a short hash', `scrypt$16384$8$1$${salt}$${Buffer.alloc(4).toString('base64url')}`],
      ['an empty salt', `scrypt$16384$8$1$$${hash}`],
    ])('%s', async (_name, stored) => {
      await expect(verifySecret('anything', stored)).resolves.toBe(false);
      await expect(verifySecret('', stored)).resolves.toBe(false);
    });
  });
});
