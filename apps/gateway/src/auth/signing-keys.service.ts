import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { TOKEN_TTL_SECONDS } from '../config.js';
import { SigningKeyRepository } from './signing-key.repository.js';

export const SIGNING_ALGORITHM = 'ES256';
/** A retired key keeps verifying for the life of the tokens it signed, plus the allowed clock skew. */
const KEEP_RETIRED_MS = (TOKEN_TTL_SECONDS + 120) * 1000;
/** How often an unknown `kid` may trigger a reload from the database (rotation on another replica). */
const RELOAD_INTERVAL_MS = 5000;
/**
 * How old the loaded keys may be when signing or serving the JWKS: `key rotate` runs in another
 * process, and a replica that never reloaded would sign with the retired key after it stops verifying.
 */
const REFRESH_INTERVAL_MS = 60000;

interface LoadedKey {
  kid: string;
  publicJwk: JWK;
  publicKey: KeyObject;
  privateKey: KeyObject;
  retired: boolean;
}

/**
 * The ES256 keys that sign and verify access tokens. They live in the identity database, so every
 * replica signs with the same active key; rotation adds a key and retires the old one, which keeps
 * verifying until its tokens have expired.
 */
@Injectable()
export class SigningKeysService implements OnModuleInit {
  private keys = new Map<string, LoadedKey>();
  private active: LoadedKey | undefined;
  private lastLoad = 0;

  constructor(private readonly repository: SigningKeyRepository) {}

  async onModuleInit(): Promise<void> {
    await this.reload();
    if (!this.active) {
      await this.repository.activate(await newKey(), true);
      await this.reload();
    }
  }

  /** Makes a new key the signing key; the previous one keeps verifying (admin `key rotate`). */
  async rotate(): Promise<{ kid: string }> {
    const key = await newKey();
    await this.repository.activate(key, false);
    await this.reload();
    return { kid: key.kid };
  }

  /** The signing key, reloaded first when the loaded keys are older than a minute. */
  async currentSigningKey(): Promise<{ kid: string; privateKey: KeyObject }> {
    await this.refreshIfStale();
    return this.signingKey();
  }

  signingKey(): { kid: string; privateKey: KeyObject } {
    if (!this.active) throw new Error('No active signing key; the gateway did not initialise its keys');
    return this.active;
  }

  /** The verification key for `kid`, reloading (at most every 5 s) when the kid is not known yet. */
  async verificationKey(kid: string): Promise<KeyObject | undefined> {
    const known = this.keys.get(kid);
    if (known) return known.publicKey;
    if (Date.now() - this.lastLoad < RELOAD_INTERVAL_MS) return undefined;
    await this.reload();
    return this.keys.get(kid)?.publicKey;
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    await this.refreshIfStale();
    return { keys: [...this.keys.values()].map((key) => key.publicJwk) };
  }

  private async refreshIfStale(): Promise<void> {
    if (Date.now() - this.lastLoad >= REFRESH_INTERVAL_MS) await this.reload();
  }

  private async reload(): Promise<void> {
    this.lastLoad = Date.now();
    const entities = await this.repository.findUsable(KEEP_RETIRED_MS);
    const keys = new Map<string, LoadedKey>();
    for (const entity of entities) {
      keys.set(entity.kid, {
        kid: entity.kid,
        publicJwk: entity.publicJwk,
        publicKey: createPublicKey({ key: entity.publicJwk as never, format: 'jwk' }),
        privateKey: createPrivateKey({ key: entity.privateJwk as never, format: 'jwk' }),
        retired: entity.retiredAt !== null,
      });
    }
    this.keys = keys;
    this.active = [...keys.values()].find((key) => !key.retired);
  }
}

async function newKey() {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicJwk = publicKey.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    kid,
    algorithm: SIGNING_ALGORITHM,
    privateJwk: privateKey.export({ format: 'jwk' }) as JWK,
    publicJwk: { ...publicJwk, kid, alg: SIGNING_ALGORITHM, use: 'sig' },
    createdAt: new Date(),
    retiredAt: null,
  };
}
