import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>;

const N = 16384;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

/** A new application secret: 32 random bytes, base64url. */
export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** scrypt with a random salt, in the self-describing form `scrypt$N$r$p$salt$hash`. */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(secret, salt, KEY_LENGTH, { N, r: R, p: P, maxmem: 64 * 1024 * 1024 });
  return ['scrypt', N, R, P, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** Constant-time check of `secret` against a stored hash; false for any malformed hash. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash, ...rest] = stored.split('$');
  if (scheme !== 'scrypt' || rest.length > 0 || !salt || !hash) return false;
  const [cost, blockSize, parallelism] = [n, r, p].map((value) => (value && /^[1-9]\d{0,6}$/.test(value) ? Number(value) : 0));
  const expected = Buffer.from(hash, 'base64url');
  // A hash part that decodes to nothing would let any secret "match" an empty derived key.
  if (!cost || !blockSize || !parallelism || expected.length !== KEY_LENGTH) return false;
  try {
    const actual = await scryptAsync(secret, Buffer.from(salt, 'base64url'), KEY_LENGTH, {
      N: cost,
      r: blockSize,
      p: parallelism,
      maxmem: 64 * 1024 * 1024,
    });
    return timingSafeEqual(actual, expected);
  } catch {
    // scrypt rejects parameters it cannot use, e.g. an N that is not a power of two.
    return false;
  }
}

/** A hash that no secret matches, so unknown applications cost as much time as wrong secrets. */
export const DECOY_HASH = `scrypt$${N}$${R}$${P}$${Buffer.alloc(16).toString('base64url')}$${Buffer.alloc(KEY_LENGTH).toString('base64url')}`;
