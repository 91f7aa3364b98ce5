import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { type GatewayConfig, TOKEN_TTL_SECONDS } from '../config.js';
import { GATEWAY_CONFIG } from '../tokens.js';
import { KeyEnvelope } from './key-envelope.js';
import type { SigningKeyEntity } from './signing-key.entity.js';
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
  /** Undefined when the key cannot be opened (its KEK is not configured): it still verifies, never signs. */
  privateKey: KeyObject | undefined;
  unopenable?: string;
  retired: boolean;
}

/**
 * The ES256 keys that sign and verify access tokens. They live in the identity database, so every
 * replica signs with the same active key; rotation adds a key and retires the old one, which keeps
 * verifying until its tokens have expired. With KEY_ENCRYPTION_KEYS set, private keys are stored sealed
 * (`KeyEnvelope`), and every start seals what is not sealed by the current key-encryption key yet.
 */
@Injectable()
export class SigningKeysService implements OnModuleInit {
  private keys = new Map<string, LoadedKey>();
  private active: LoadedKey | undefined;
  private lastLoad = 0;

  private readonly envelope: KeyEnvelope;

  constructor(
    private readonly repository: SigningKeyRepository,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
  ) {
    this.envelope = new KeyEnvelope(config.KEY_ENCRYPTION_KEYS);
  }

  async onModuleInit(): Promise<void> {
    await this.reseal();
    await this.reload();
    if (!this.active) {
      await this.repository.activate(await this.newKey(), true);
      await this.reload();
    }
  }

  /** Makes a new key the signing key; the previous one keeps verifying (admin `key rotate`). */
  async rotate(): Promise<{ kid: string }> {
    const key = await this.newKey();
    await this.repository.activate(key, false);
    await this.reload();
    return { kid: key.kid };
  }

  /**
   * Seals every stored private key that is in plaintext or sealed by an older key-encryption key with the
   * current one (admin `key reseal`; also at every start). Nothing without a configured KEK. A key sealed
   * by a KEK this process does not list is left alone and counted in `unopenable` (a replica started with
   * an outdated KEY_ENCRYPTION_KEYS must neither fail nor undo a rotation).
   */
  async reseal(): Promise<{ kekId: string | null; resealed: number; unopenable: number }> {
    const kekId = this.envelope.currentKekId;
    if (kekId === undefined) return { kekId: null, resealed: 0, unopenable: 0 };
    let unopenable = 0;
    const resealed = await this.repository.reseal(kekId, (key) => {
      if (key.kekId !== null && !this.envelope.knows(key.kekId)) {
        unopenable++;
        return null;
      }
      const sealed = this.envelope.seal(key.kid, this.privateJwkOf(key));
      return { kekId: sealed.kekId, encryptedPrivateJwk: sealed.sealed };
    });
    return { kekId, resealed, unopenable };
  }

  /** The signing key, reloaded first when the loaded keys are older than a minute. */
  async currentSigningKey(): Promise<{ kid: string; privateKey: KeyObject }> {
    await this.refreshIfStale();
    return this.signingKey();
  }

  signingKey(): { kid: string; privateKey: KeyObject } {
    if (!this.active) throw new Error('No active signing key; the gateway did not initialise its keys');
    const { kid, privateKey, unopenable } = this.active;
    if (!privateKey) throw new Error(`The active signing key cannot be used: ${unopenable}`);
    return { kid, privateKey };
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
      let privateKey: KeyObject | undefined;
      let unopenable: string | undefined;
      try {
        privateKey = createPrivateKey({ key: this.privateJwkOf(entity) as never, format: 'jwk' });
      } catch (error) {
        // Another replica may have sealed it with a KEK this one does not know yet (during a rotation).
        unopenable = (error as Error).message;
      }
      keys.set(entity.kid, {
        kid: entity.kid,
        publicJwk: entity.publicJwk,
        publicKey: createPublicKey({ key: entity.publicJwk as never, format: 'jwk' }),
        privateKey,
        unopenable,
        retired: entity.retiredAt !== null,
      });
    }
    this.keys = keys;
    this.active = [...keys.values()].find((key) => !key.retired);
  }

  private privateJwkOf(entity: SigningKeyEntity): JWK {
    if (entity.encryptedPrivateJwk !== null && entity.kekId !== null) {
      return this.envelope.open(entity.kid, { kekId: entity.kekId, sealed: entity.encryptedPrivateJwk });
    }
    if (entity.privateJwk === null) throw new Error(`signing key ${entity.kid} has no private key`);
    return entity.privateJwk;
  }

  /** A new key pair, its private part sealed when a key-encryption key is configured. */
  private async newKey(): Promise<SigningKeyEntity> {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const publicJwk = publicKey.export({ format: 'jwk' }) as JWK;
    const kid = await calculateJwkThumbprint(publicJwk);
    const privateJwk = privateKey.export({ format: 'jwk' }) as JWK;
    const sealed = this.envelope.currentKekId === undefined ? undefined : this.envelope.seal(kid, privateJwk);
    return {
      kid,
      algorithm: SIGNING_ALGORITHM,
      privateJwk: sealed ? null : privateJwk,
      kekId: sealed?.kekId ?? null,
      encryptedPrivateJwk: sealed?.sealed ?? null,
      publicJwk: { ...publicJwk, kid, alg: SIGNING_ALGORITHM, use: 'sig' },
      createdAt: new Date(),
      retiredAt: null,
    };
  }
}
