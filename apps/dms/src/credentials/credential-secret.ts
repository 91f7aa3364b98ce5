import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { DEVICE_SECRET_PREFIX } from '@tracking/contracts';

/** A new device secret: `dvs_` + base64url of 32 random bytes (256 bits). */
export function newDeviceSecret(): string {
  return DEVICE_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * What is stored of a secret: its SHA-256. A slow hash (scrypt, argon2) protects guessable passwords; a
 * 256-bit random secret cannot be guessed from its digest, and a fast digest keeps authentication cheap.
 */
export function secretDigest(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** Whether `secret` has `digest`, compared in constant time (the digests have a fixed length). */
export function secretMatches(secret: string, digest: Buffer): boolean {
  const candidate = secretDigest(secret);
  return candidate.length === digest.length && timingSafeEqual(candidate, digest);
}
