import { createHash, hkdfSync, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { deflateRaw, inflateRaw } from 'node:zlib';
import { Inject, Injectable } from '@nestjs/common';
import type { Result } from 'ioredis';
import type { GatewayConfig } from '../../config.js';
import { decrypt, encrypt } from '../../crypto/aes-gcm.js';
import { GATEWAY_CONFIG } from '../../tokens.js';
import { SharedRedis } from '../redis/shared-redis.js';
import { ThrottledLog } from '../redis/throttled-log.js';

/** How long a finished request's response is replayed (docs/api.md, "Idempotency keys": 24 h). */
export const KEEP_RESPONSE_MS = 24 * 60 * 60 * 1000;

/** A response as it is replayed. */
export interface StoredResponse {
  status: number;
  /** The headers that belong to the outcome (`Location`, `ETag`), lower-case names. */
  headers: Record<string, string>;
  /** The body exactly as sent, '' for none. */
  body: string;
}

/**
 * Where a key's record lives, the application's index of its records (a sorted set scored by expiry,
 * which counts them against IDEMPOTENCY_MAX_KEYS_PER_APPLICATION) and its byte account (a hash: the
 * stored size of each record holding a response, and their `total`, against
 * IDEMPOTENCY_MAX_BYTES_PER_APPLICATION).
 */
export interface IdempotencyRecord {
  key: string;
  index: string;
  sizes: string;
  /** The AES-256-GCM key of the stored response, derived from the idempotency key (`sealResponse`). */
  responseKey: Buffer;
}

export type Reservation =
  | { outcome: 'acquired'; owner: string }
  | { outcome: 'full'; limit: 'keys' | 'bytes'; retryAfterMs: number }
  | { outcome: 'in-flight' }
  | { outcome: 'reused' }
  | { outcome: 'completed'; response: StoredResponse };

/** The Redis server's clock in ms, inside a script (the clock every replica shares). */
const NOW_MS = `local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)`;

/**
 * Drops the application's expired records from its index (KEYS[2]) and their sizes from its byte
 * account (KEYS[3]); sets `used` to the bytes its live records hold. Needs `now`.
 */
const FORGET_EXPIRED = `
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
if #expired > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  local freed = 0
  for _, member in ipairs(expired) do
    local size = redis.call('HGET', KEYS[3], member)
    if size then
      freed = freed + tonumber(size)
      redis.call('HDEL', KEYS[3], member)
    end
  end
  if freed > 0 then redis.call('HINCRBY', KEYS[3], 'total', -freed) end
end
local used = tonumber(redis.call('HGET', KEYS[3], 'total') or '0')`;

/**
 * Takes the key unless a record exists: a hash with `state` (running or done), `fingerprint`,
 * `owner` (the request running it) and, once done, `response`. The marker of a running request
 * expires, so a gateway that dies mid-request does not block the key for long.
 *
 * The application's index (KEYS[2], a sorted set of its records scored by when they expire) counts
 * its live records, its byte account (KEYS[3]) their stored bytes: expired ones are dropped first, and
 * a new record beyond ARGV[4] records, or without room for ARGV[6] more bytes (one more of the largest
 * answers stored, so that its outcome will fit), is refused.
 * KEYS[1] record, KEYS[2] index, KEYS[3] byte account; ARGV[1] fingerprint, ARGV[2] owner, ARGV[3]
 * marker TTL ms, ARGV[4] most records, ARGV[5] index TTL ms, ARGV[6] room needed, ARGV[7] most bytes.
 * Returns nil when taken, {'full' or 'full-bytes', ms until the oldest expires} when over a cap,
 * else {state, fingerprint, response or false}.
 */
const RESERVE = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HMGET', KEYS[1], 'state', 'fingerprint', 'response')
end
${NOW_MS}
${FORGET_EXPIRED}
local full = nil
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then full = 'full'
elseif used + tonumber(ARGV[6]) > tonumber(ARGV[7]) then full = 'full-bytes' end
if full then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local wait = 1000
  if oldest[2] then wait = tonumber(oldest[2]) - now end
  return {full, tostring(wait)}
end
redis.call('HSET', KEYS[1], 'state', 'running', 'fingerprint', ARGV[1], 'owner', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), KEYS[1])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return nil
`;

/**
 * Records the response, if this request still owns the record, or the record is gone (its in-flight
 * marker expired while the request ran longer: nobody else took the key, and a retry must replay this
 * outcome rather than run again), and the application's byte account (KEYS[3]) has room for it; its
 * entry in the index moves to the record's new expiry, its size joins the account. Without room the key
 * is freed instead. KEYS[1] record, KEYS[2] index, KEYS[3] byte account; ARGV[1] owner, ARGV[2]
 * response, ARGV[3] TTL ms, ARGV[4] most bytes, ARGV[5] fingerprint.
 * Returns 1 when stored, 2 when freed for want of room, 0 when another request holds the record.
 */
const COMPLETE = `
if redis.call('EXISTS', KEYS[1]) == 1 and redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
${NOW_MS}
${FORGET_EXPIRED}
local size = string.len(ARGV[2])
if used + size > tonumber(ARGV[4]) then
  redis.call('ZREM', KEYS[2], KEYS[1])
  redis.call('DEL', KEYS[1])
  return 2
end
redis.call('HSET', KEYS[1], 'state', 'done', 'fingerprint', ARGV[5], 'response', ARGV[2])
redis.call('HDEL', KEYS[1], 'owner')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), KEYS[1])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('HSET', KEYS[3], KEYS[1], size)
redis.call('HINCRBY', KEYS[3], 'total', size)
redis.call('PEXPIRE', KEYS[3], ARGV[3])
return 1
`;

/** Frees the key, if this request still owns it. KEYS[1] record, KEYS[2] index; ARGV[1] owner. */
const RELEASE = `
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('ZREM', KEYS[2], KEYS[1])
return redis.call('DEL', KEYS[1])
`;

/** What became of an outcome given to `complete`. */
export type Completion = 'stored' | 'too-large' | 'over-budget' | 'not-owner';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    idempotencyReserve(
      record: string,
      index: string,
      sizes: string,
      fingerprint: string,
      owner: string,
      markerTtlMs: number,
      maxRecords: number,
      indexTtlMs: number,
      room: number,
      maxBytes: number,
    ): Result<unknown, Context>;
    idempotencyComplete(
      record: string,
      index: string,
      sizes: string,
      owner: string,
      response: string,
      ttlMs: number,
      maxBytes: number,
      fingerprint: string,
    ): Result<unknown, Context>;
    idempotencyRelease(record: string, index: string, owner: string): Result<unknown, Context>;
  }
}

/**
 * Idempotency records in the shared Redis, one per application and key. The scripts are the client's
 * commands (`defineCommand`): ioredis sends them by SHA1 and their source when Redis does not know them.
 */
@Injectable()
export class IdempotencyStore {
  /**
   * How long a running request keeps its key: longer than any POST can take (at most two service
   * calls, each cut at RPC_TIMEOUT_MS), short enough that a crashed gateway frees the key soon.
   */
  readonly inFlightMs: number;
  /**
   * Where failures to reach Redis are logged, at most once per 30 s. Here, once per gateway, rather than
   * in the interceptor, of which each controller module has its own instance.
   */
  readonly failureLog = new ThrottledLog(30000);

  constructor(
    private readonly redis: SharedRedis,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
  ) {
    this.inFlightMs = 3 * config.RPC_TIMEOUT_MS;
    this.maxKeys = config.IDEMPOTENCY_MAX_KEYS_PER_APPLICATION;
    this.maxBytes = config.IDEMPOTENCY_MAX_BYTES_PER_APPLICATION;
    this.maxResponseBytes = config.IDEMPOTENCY_MAX_RESPONSE_BYTES;
    redis.client.defineCommand('idempotencyReserve', { numberOfKeys: 3, lua: RESERVE });
    redis.client.defineCommand('idempotencyComplete', { numberOfKeys: 3, lua: COMPLETE });
    redis.client.defineCommand('idempotencyRelease', { numberOfKeys: 2, lua: RELEASE });
  }

  /** Records one application may hold at once (IDEMPOTENCY_MAX_KEYS_PER_APPLICATION). */
  readonly maxKeys: number;
  /** Bytes of stored responses one application may hold at once (IDEMPOTENCY_MAX_BYTES_PER_APPLICATION). */
  readonly maxBytes: number;
  /** The largest stored form of one response (IDEMPOTENCY_MAX_RESPONSE_BYTES). */
  readonly maxResponseBytes: number;

  /** The Redis keys of an application's idempotency key (hashed: keys are up to 255 characters) and of its index. */
  recordKey(applicationId: string, idempotencyKey: string): IdempotencyRecord {
    return {
      key: this.redis.key('idempotency', applicationId, createHash('sha256').update(idempotencyKey).digest('hex')),
      index: this.redis.key('idempotency-index', applicationId),
      sizes: this.redis.key('idempotency-bytes', applicationId),
      responseKey: Buffer.from(hkdfSync('sha256', idempotencyKey, applicationId, RESPONSE_KEY_INFO, 32)),
    };
  }

  /**
   * Takes the key for a request, or says why not. Rejects when Redis does not answer; then the
   * reservation is withdrawn (`release`, sent on the same connection, so after the reservation): a
   * command that timed out on this side still runs in Redis, and would hold the key as running until
   * its marker expires, every retry getting 409 IdempotencyKeyInUse meanwhile.
   */
  async reserve(record: IdempotencyRecord, fingerprint: string): Promise<Reservation> {
    this.requireRedis();
    const owner = randomUUID();
    try {
      return await this.tryReserve(record, fingerprint, owner);
    } catch (error) {
      this.redis.client.idempotencyRelease(record.key, record.index, owner).catch(() => undefined);
      throw error;
    }
  }

  private async tryReserve(record: IdempotencyRecord, fingerprint: string, owner: string): Promise<Reservation> {
    const reply = await this.redis.client.idempotencyReserve(
      record.key,
      record.index,
      record.sizes,
      fingerprint,
      owner,
      this.inFlightMs,
      this.maxKeys,
      KEEP_RESPONSE_MS,
      Math.min(this.maxResponseBytes, this.maxBytes),
      this.maxBytes,
    );
    if (reply === null) return { outcome: 'acquired', owner };
    const [state, storedFingerprint, response] = reply as [string | null, string | null, string | null];
    if (state === 'full' || state === 'full-bytes') {
      return { outcome: 'full', limit: state === 'full' ? 'keys' : 'bytes', retryAfterMs: Number(storedFingerprint) };
    }
    if (storedFingerprint !== fingerprint) return { outcome: 'reused' };
    if (state === 'done' && response !== null) return { outcome: 'completed', response: await openResponse(record, response) };
    return { outcome: 'in-flight' };
  }

  /**
   * Stores the outcome for replay, unless its stored form is larger than `maxResponseBytes` or the
   * application's byte account has no room for it: then the key is freed (a retry runs again).
   */
  async complete(record: IdempotencyRecord, owner: string, fingerprint: string, response: StoredResponse): Promise<Completion> {
    const sealed = await sealResponse(record, response);
    if (sealed.length > this.maxResponseBytes) {
      await this.release(record, owner);
      return 'too-large';
    }
    this.requireRedis();
    const done = await this.redis.client.idempotencyComplete(record.key, record.index, record.sizes, owner, sealed, KEEP_RESPONSE_MS, this.maxBytes, fingerprint);
    return done === 1 ? 'stored' : done === 2 ? 'over-budget' : 'not-owner';
  }

  async release(record: IdempotencyRecord, owner: string): Promise<void> {
    this.requireRedis();
    await this.redis.client.idempotencyRelease(record.key, record.index, owner);
  }

  private requireRedis(): void {
    if (!this.redis.isReady()) throw new Error(`Redis connection is ${this.redis.client.status}`);
  }
}

const RESPONSE_KEY_INFO = 'tracking idempotency response v1';
/** Sealed JSON, as stored before responses were compressed (read for 24 h after the change). */
const SEALED = 'v1';
/** Compressed (raw DEFLATE), then sealed. */
const SEALED_COMPRESSED = 'v2';
const deflate = promisify(deflateRaw);
const inflate = promisify(inflateRaw);

/**
 * A response as Redis keeps it: compressed (raw DEFLATE, in libuv's thread pool, not on the event loop:
 * the large answers, lists of rejected entries, shrink tenfold), then encrypted (AES-256-GCM) with a key
 * derived (HKDF-SHA256) from the idempotency key and the application, which Redis never holds (the
 * record's name is a SHA-256 of the key). So a copy of Redis shows no response in the clear, such as a
 * webhook's secret in the answer to its create: opening one needs the client's idempotency key. The
 * record's name is authenticated data, so a sealed response copied to another record does not open.
 * Form: `v2.<iv>.<tag>.<ciphertext>`, base64url.
 */
export async function sealResponse(record: IdempotencyRecord, response: StoredResponse): Promise<string> {
  const compressed = await deflate(Buffer.from(JSON.stringify(response)));
  return [SEALED_COMPRESSED, ...encrypt(record.responseKey, compressed, record.key)].join('.');
}

/**
 * The response `sealResponse` stored; one sealed uncompressed (`v1`), or stored as plain JSON (before
 * responses were sealed), as it is.
 */
export async function openResponse(record: IdempotencyRecord, stored: string): Promise<StoredResponse> {
  if (stored.startsWith('{')) return JSON.parse(stored) as StoredResponse;
  const [format, ...parts] = stored.split('.');
  if ((format !== SEALED && format !== SEALED_COMPRESSED) || parts.length !== 3) throw new Error('the stored response is not in a sealed form');
  const opened = decrypt(record.responseKey, parts as [string, string, string], record.key);
  return JSON.parse((format === SEALED_COMPRESSED ? await inflate(opened) : opened).toString('utf8')) as StoredResponse;
}
