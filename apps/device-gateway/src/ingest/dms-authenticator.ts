import { createHash } from 'node:crypto';
import { type AuthenticatedDevice, CredentialProtocol, Subjects } from '@tracking/contracts';
import { entryBound, type Logger } from '@tracking/core';
import type { NatsRpcClient } from '@tracking/messaging/nats';
import { LRUCache } from 'lru-cache';
import type { DeviceAuthenticator, DeviceIdentity, DeviceProtocol } from './device-sink.js';

/** Credential ids per liveness question: well under NATS's max_payload (a UUID is 39 bytes in JSON). */
const LIVENESS_CHUNK = 5000;

export interface DmsAuthenticatorOptions {
  rpc: NatsRpcClient;
  logger: Logger;
  /** How long an accepted HTTP secret is trusted without asking again; 0: never cached. */
  cacheMs: number;
  /** How often watched credentials are checked (at most 60 s, the contract's bound). */
  revocationCheckMs: number;
  rpcTimeoutMs: number;
}

/**
 * `DeviceAuthenticator` over the DMS (`dms.credentials.authenticate`, `dms.credentials.live`).
 *
 * - Positive answers are cached only for `Http`, which authenticates every request; MQTT and Teltonika
 *   authenticate once per connection, and a new connection must see a deletion at once. A cached HTTP
 *   credential that was deleted meanwhile stores nothing: the DMS checks every batch's credentials in its
 *   transaction, the submit answers `revoked`, and the cache entry goes.
 * - `watch` asks the DMS every `revocationCheckMs` which watched credentials are still live (one question
 *   per 5000 credentials, whatever the number of connections), and learns at once of those a submit
 *   found revoked. A round the DMS cannot answer revokes nothing.
 * - A DMS that cannot be reached makes `authenticate` reject (ServiceUnavailable, GatewayTimeout): the
 *   listener answers "try later" (HTTP 503, MQTT server unavailable, Teltonika no answer), not "wrong secret".
 */
export class DmsAuthenticator implements DeviceAuthenticator {
  private readonly cache: LRUCache<string, DeviceIdentity> | undefined;
  private readonly watchers = new Map<string, Set<() => void>>();
  /** The tenant of each credential seen, for identities that do not carry it (see `DeviceIdentity.tenantId`). */
  private readonly tenants = new LRUCache<string, string>(entryBound(200_000));
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: DmsAuthenticatorOptions) {
    this.cache = options.cacheMs > 0 ? new LRUCache({ ...entryBound(100_000), ttl: options.cacheMs }) : undefined;
    this.timer = setInterval(() => void this.checkWatched(), options.revocationCheckMs);
    this.timer.unref();
  }

  async authenticate(protocol: DeviceProtocol, identifier: string, secret: string | null): Promise<DeviceIdentity | null> {
    const key = protocol === 'Http' && secret !== null ? cacheKey(protocol, identifier, secret) : undefined;
    const cached = key === undefined ? undefined : this.cache?.get(key);
    if (cached) return cached;
    const found = await this.options.rpc.call(
      Subjects.dms.credentials.authenticate,
      { protocol: protocol as CredentialProtocol, identifier, secret },
      { timeoutMs: this.options.rpcTimeoutMs },
    );
    if (!found) return null;
    const identity = toIdentity(found);
    this.tenants.set(identity.credentialId, found.tenantId);
    if (key !== undefined) this.cache?.set(key, identity);
    return identity;
  }

  watch(identity: DeviceIdentity, onRevoked: () => void): () => void {
    let callbacks = this.watchers.get(identity.credentialId);
    if (!callbacks) {
      callbacks = new Set();
      this.watchers.set(identity.credentialId, callbacks);
    }
    // Once: the wrapper removes itself before calling.
    const once = () => {
      stop();
      onRevoked();
    };
    callbacks.add(once);
    const stop = () => {
      const set = this.watchers.get(identity.credentialId);
      set?.delete(once);
      if (set?.size === 0) this.watchers.delete(identity.credentialId);
    };
    return stop;
  }

  /** The tenant of a credential this authenticator accepted, or undefined. */
  tenantOf(identity: DeviceIdentity): string | undefined {
    return identity.tenantId ?? this.tenants.get(identity.credentialId);
  }

  /** A submit found the credential revoked: forget it and close its connections now. */
  revoked(credentialId: string): void {
    for (const key of this.cache?.keys() ?? []) {
      if (this.cache?.peek(key)?.credentialId === credentialId) this.cache.delete(key);
    }
    for (const callback of [...(this.watchers.get(credentialId) ?? [])]) callback();
  }

  /** Asks which watched credentials are live; revokes the others. Public for tests and shutdown. */
  async checkWatched(): Promise<void> {
    const ids = [...this.watchers.keys()];
    for (let start = 0; start < ids.length; start += LIVENESS_CHUNK) {
      const chunk = ids.slice(start, start + LIVENESS_CHUNK);
      let live: Set<string>;
      try {
        const reply = await this.options.rpc.call(Subjects.dms.credentials.live, { credentialIds: chunk }, { timeoutMs: this.options.rpcTimeoutMs });
        live = new Set(reply.live);
      } catch (error) {
        this.options.logger.warn({ err: error }, 'could not check the credentials of open connections; checking again at the next round');
        return;
      }
      for (const id of chunk) if (!live.has(id)) this.revoked(id);
    }
  }

  close(): void {
    clearInterval(this.timer);
  }
}

function cacheKey(protocol: DeviceProtocol, identifier: string, secret: string): string {
  // The digest, not the secret, is kept in memory as the key.
  return `${protocol}|${identifier}|${createHash('sha256').update(secret).digest('base64')}`;
}

function toIdentity(found: AuthenticatedDevice): DeviceIdentity {
  return {
    credentialId: found.credentialId,
    deviceId: found.deviceId,
    accountId: found.accountId,
    tenantId: found.tenantId,
    protocol: found.protocol,
    identifier: found.identifier,
  };
}
