import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM with a random 96-bit IV and `aad` as authenticated data: `[iv, tag, ciphertext]`, each
 * base64url. Shared by the signing keys' envelope (`KeyEnvelope`) and the idempotency store's sealed
 * responses.
 */
export function encrypt(key: Buffer, plaintext: Buffer, aad: string): [string, string, string] {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return [iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')];
}

/** The plaintext `encrypt` sealed with the same key and `aad`; throws when either differs or anything was altered. */
export function decrypt(key: Buffer, [iv, tag, ciphertext]: [string, string, string], aad: string): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: 16 });
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
}
