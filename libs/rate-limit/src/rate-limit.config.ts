import { isIP } from 'node:net';
import { ConfigError } from '@tracking/core';
import { validate as isUuid } from 'uuid';

/**
 * A rate limit as configured: `quota` requests per `windowSeconds` on average, and at most `burst`
 * at once after a quiet period (a token bucket of `burst` tokens refilled at quota/window).
 */
export interface RateLimit {
  quota: number;
  windowSeconds: number;
  burst: number;
}

/** The limits a tenant may override (RATE_LIMIT_TENANT_OVERRIDES); the per-address ones name no tenant. */
export interface TenantLimits {
  application?: RateLimit;
  tokenFailures?: RateLimit;
  readings?: RateLimit;
}

const OVERRIDABLE: ReadonlySet<string> = new Set(['application', 'tokenFailures', 'readings']);
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };
const RATE_LIMIT = /^(\d{1,7})\s*\/\s*(\d{0,5})\s*([smh])(?:\s+burst\s+(\d{1,7}))?$/;
const MAX_COUNT = 1_000_000;

/** The syntax of every rate limit setting, for error messages. */
export const RATE_LIMIT_SYNTAX = '"<quota>/<window>[ burst <n>]" with the window in s, m or h, e.g. "100/1s burst 200"';

/**
 * Parses `100/1s`, `10/1m burst 20`, `1000/h`; `burst` defaults to the quota. Throws a message
 * (without the variable's name) on anything else.
 */
export function parseRateLimit(text: string): RateLimit {
  const match = RATE_LIMIT.exec(text.trim());
  if (!match) throw new Error(`must be ${RATE_LIMIT_SYNTAX}, got "${text}"`);
  const [, quotaText, windowText, unit = 's', burstText] = match;
  const quota = Number(quotaText);
  const windowSeconds = Number(windowText || '1') * (UNIT_SECONDS[unit] ?? 1);
  const burst = burstText === undefined ? quota : Number(burstText);
  if (quota < 1 || quota > MAX_COUNT) throw new Error(`needs a quota of 1..${MAX_COUNT}, got "${text}"`);
  if (windowSeconds < 1 || windowSeconds > 86400) throw new Error(`needs a window of 1 s..24 h, got "${text}"`);
  if (burst < 1 || burst > MAX_COUNT) throw new Error(`needs a burst of 1..${MAX_COUNT}, got "${text}"`);
  return { quota, windowSeconds, burst };
}

/** A config reader for one rate limit setting. */
export function rateLimitSetting(options: { default: string }) {
  return (name: string, raw: string | undefined): RateLimit => {
    try {
      return parseRateLimit(raw === undefined || raw === '' ? options.default : raw);
    } catch (error) {
      throw new ConfigError(name, (error as Error).message);
    }
  };
}

/**
 * A config reader for per-tenant overrides: a JSON object from tenant id to the limits it overrides,
 * e.g. `{"0190...": {"application": "500/1s burst 1000", "tokenFailures": "60/1m"}}`. Tenant ids are
 * stored lower-case, as the identity database returns them.
 */
export function tenantOverridesSetting() {
  return (name: string, raw: string | undefined): ReadonlyMap<string, TenantLimits> => {
    const overrides = new Map<string, TenantLimits>();
    if (raw === undefined || raw.trim() === '') return overrides;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new ConfigError(name, 'must be a JSON object from tenant id to limits, e.g. {"<tenantId>":{"application":"500/1s"}}');
    }
    if (!isPlainObject(parsed)) throw new ConfigError(name, 'must be a JSON object from tenant id to limits');
    for (const [tenantId, limits] of Object.entries(parsed)) {
      if (!isUuid(tenantId)) throw new ConfigError(name, `has the key "${tenantId}", which is not a tenant id (UUID)`);
      if (!isPlainObject(limits)) throw new ConfigError(name, `maps tenant ${tenantId} to something that is not an object of limits`);
      overrides.set(tenantId.toLowerCase(), tenantLimits(name, tenantId, limits));
    }
    return overrides;
  };
}

function tenantLimits(name: string, tenantId: string, limits: Record<string, unknown>): TenantLimits {
  const result: TenantLimits = {};
  for (const [limitName, text] of Object.entries(limits)) {
    if (!OVERRIDABLE.has(limitName)) {
      throw new ConfigError(name, `names the limit "${limitName}" for tenant ${tenantId}; tenants can override ${[...OVERRIDABLE].join(', ')}`);
    }
    if (typeof text !== 'string') throw new ConfigError(name, `gives ${limitName} of tenant ${tenantId} as a ${typeof text}, not a string`);
    try {
      result[limitName as keyof TenantLimits] = parseRateLimit(text);
    } catch (error) {
      throw new ConfigError(name, `${limitName} of tenant ${tenantId} ${(error as Error).message}`);
    }
  }
  return result;
}

/** Fastify's `trustProxy`: the proxies to believe, or whether to believe the hop at a position. */
export type TrustProxy = string[] | ((address: string, hop: number) => boolean);

/**
 * A config reader for `TRUST_PROXY`, handed to Fastify's `trustProxy`: empty (the client address is
 * the TCP peer), a number of proxy hops, or a comma-separated list of proxy addresses or CIDR ranges
 * whose `X-Forwarded-For` is believed.
 */
export function trustProxySetting() {
  return (name: string, raw: string | undefined): TrustProxy | undefined => {
    const value = raw?.trim() ?? '';
    if (value === '') return undefined;
    if (/^\d+$/.test(value)) {
      const hops = Number(value);
      if (hops < 1 || hops > 10) throw new ConfigError(name, 'must be a number of hops from 1 to 10, or proxy addresses');
      // What Fastify does with a number, which its typings do not accept.
      return (_address, hop) => hop < hops;
    }
    const proxies = value.split(',').map((entry) => entry.trim());
    for (const proxy of proxies) {
      if (!isAddressOrRange(proxy)) throw new ConfigError(name, `must list IP addresses or CIDR ranges, got "${proxy}"`);
    }
    return proxies;
  };
}

function isAddressOrRange(text: string): boolean {
  const [address, bits, ...rest] = text.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The default of `RATE_LIMIT_READINGS`, the tenant's readings per second: one bucket charged by the
 * gateway's `POST /readings` and by the device gateway, which must therefore read the same limit.
 */
export const DEFAULT_READINGS_LIMIT = '50000/1s burst 100000';
