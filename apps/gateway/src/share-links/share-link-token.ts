import { createHash, randomBytes } from 'node:crypto';

/** 128 random bits as base64url without padding: 22 characters. */
const TOKEN_BYTES = 16;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{22}$/;

/** A new share link token and the digest the OMS stores in its place. */
export function newShareToken(): { token: string; digest: string } {
  const token = randomBytes(TOKEN_BYTES).toString('base64url');
  return { token, digest: tokenDigest(token) };
}

/**
 * The SHA-256 digest (hex) the OMS finds a link by, or undefined for a string that cannot be a token
 * (answered 404 without asking anyone). A 128-bit random token needs no slow hash: nobody can guess
 * it, and the digest only keeps a database reader from using what they read.
 */
export function shareTokenDigest(candidate: string): string | undefined {
  return TOKEN_PATTERN.test(candidate) ? tokenDigest(candidate) : undefined;
}

function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
