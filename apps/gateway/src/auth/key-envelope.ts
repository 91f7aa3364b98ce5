import { randomBytes } from 'node:crypto';
import { ConfigError } from '@tracking/core';
import type { JWK } from 'jose';
import { decrypt, encrypt } from '../crypto/aes-gcm.js';

/** A key-encryption key (KEK): 32 bytes for AES-256-GCM, under an id that is stored with what it wraps. */
export interface KeyEncryptionKey {
  id: string;
  key: Buffer;
}

const FORMAT = 'v1';
const KEK_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * A config reader for `KEY_ENCRYPTION_KEYS`: `<id>:<base64 of 32 bytes>`, comma-separated, the first one
 * wrapping new keys and the others only unwrapping (during a rotation). Required with NODE_ENV=production;
 * elsewhere it may be empty, and signing keys are then stored unencrypted.
 */
export function keyEncryptionKeysSetting() {
  return (name: string, raw: string | undefined): KeyEncryptionKey[] => {
    const value = raw?.trim() ?? '';
    if (value === '') {
      if (process.env.NODE_ENV === 'production') {
        throw new ConfigError(name, 'is required in production: the key that encrypts the signing keys at rest, "<id>:<base64 of 32 random bytes>"');
      }
      return [];
    }
    const keys = value.split(',').map((entry) => {
      const separator = entry.indexOf(':');
      const id = entry.slice(0, separator).trim();
      const material = entry.slice(separator + 1).trim();
      if (separator < 1 || !KEK_ID.test(id)) {
        throw new ConfigError(name, 'must list "<id>:<base64 key>" entries, comma-separated, each id 1..64 characters of [A-Za-z0-9_.-]');
      }
      const key = Buffer.from(material, 'base64');
      if (!/^[A-Za-z0-9+/]{43}=?$/.test(material) || key.length !== 32) {
        throw new ConfigError(name, `has key "${id}" that is not 32 bytes in base64 (make one with: openssl rand -base64 32)`);
      }
      return { id, key };
    });
    const ids = keys.map((entry) => entry.id);
    const duplicate = ids.find((id, index) => ids.indexOf(id) !== index);
    if (duplicate !== undefined) throw new ConfigError(name, `lists the key id "${duplicate}" twice`);
    return keys;
  };
}

/** A private JWK encrypted for storage, and the id of the KEK that wraps its data key. */
export interface SealedKey {
  kekId: string;
  sealed: string;
}

/**
 * Envelope encryption of private signing keys: each key is encrypted with a data key of its own
 * (AES-256-GCM), and that data key is encrypted ("wrapped") with the KEK (AES-256-GCM). The signing
 * key's `kid` is authenticated with both, so a sealed value copied to another row does not open.
 * Stored form: `v1.<wrap iv>.<wrap tag>.<wrapped data key>.<iv>.<tag>.<ciphertext>`, base64url.
 */
export class KeyEnvelope {
  private readonly byId: ReadonlyMap<string, Buffer>;

  constructor(private readonly keks: readonly KeyEncryptionKey[]) {
    this.byId = new Map(keks.map((kek) => [kek.id, kek.key]));
  }

  /** The id of the KEK that wraps new keys; undefined when none is configured (keys stay in plaintext). */
  get currentKekId(): string | undefined {
    return this.keks[0]?.id;
  }

  /** Whether the KEK `kekId` is configured (so keys it wraps can be opened). */
  knows(kekId: string): boolean {
    return this.byId.has(kekId);
  }

  seal(kid: string, privateJwk: JWK): SealedKey {
    const kek = this.keks[0];
    if (!kek) throw new Error('no key-encryption key is configured');
    const dataKey = randomBytes(32);
    const wrapped = encrypt(kek.key, dataKey, `${kid}|${kek.id}`);
    const content = encrypt(dataKey, Buffer.from(JSON.stringify(privateJwk)), kid);
    dataKey.fill(0);
    return { kekId: kek.id, sealed: [FORMAT, ...wrapped, ...content].map(String).join('.') };
  }

  open(kid: string, { kekId, sealed }: SealedKey): JWK {
    const kek = this.byId.get(kekId);
    if (!kek) throw new Error(`signing key ${kid} is wrapped by key-encryption key "${kekId}", which KEY_ENCRYPTION_KEYS does not list`);
    const [format, ...parts] = sealed.split('.');
    if (format !== FORMAT || parts.length !== 6) throw new Error(`signing key ${kid} is not in the sealed form ${FORMAT}`);
    const [wrapIv, wrapTag, wrapped, iv, tag, ciphertext] = parts as [string, string, string, string, string, string];
    const dataKey = decrypt(kek, [wrapIv, wrapTag, wrapped], `${kid}|${kekId}`);
    try {
      return JSON.parse(decrypt(dataKey, [iv, tag, ciphertext], kid).toString('utf8')) as JWK;
    } finally {
      dataKey.fill(0);
    }
  }
}
