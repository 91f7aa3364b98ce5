import type { Redis, Result } from 'ioredis';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /**
     * The GCRA script below, defined on the client by `defineGcra`: the number of buckets, the buckets,
     * then the emission interval in µs, the burst and 1 (charge) or -1 (refund).
     */
    gcra(...args: [bucketCount: number, ...bucketsThenArgs: (string | number)[]]): Result<unknown, Context>;
  }
}

/**
 * GCRA (the generic cell rate algorithm, a token bucket kept as one timestamp) in one Lua script, so
 * that reading and advancing a bucket is a single atomic step however many replicas share it.
 *
 * The key holds the bucket's theoretical arrival time (TAT) in microseconds of the Redis server's
 * clock (`TIME`, which a script may call before writing since Redis 5 replicates scripts by their
 * effects), so the replicas' own clocks do not matter. Each request moves the TAT one emission
 * interval (window / quota) further; a request is allowed while the TAT stays within
 * `burst` intervals of now. The key expires when the bucket would be full again.
 *
 * Several keys are one request counted in several buckets of the same limit: it is allowed only if
 * every bucket allows it, and then every bucket is charged; the answer is that of the fullest bucket.
 * ARGV[3] is the cost: 1 for a request, n for n units at once (the readings of a batch: all of them fit or
 * none is charged), -1 gives a charged request back (a refund) to every bucket instead.
 *
 * ARGV[4] is the mode: `charge` (the default, as above); `peek` answers whether `cost` would be allowed
 * without charging anything; `force` charges every bucket even past its capacity (a failure counted after
 * the fact: it pushes the bucket's refill further out, so the excess is paid back in waiting).
 *
 * KEYS the buckets; ARGV[1] emission interval in µs; ARGV[2] burst; ARGV[3] the cost (negative: refund); ARGV[4] the mode.
 * Returns {allowed (1 or 0), remaining requests now, ms until one more request is available}.
 */
const GCRA_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local interval = tonumber(ARGV[1])
local capacity = interval * tonumber(ARGV[2])
local step = interval * tonumber(ARGV[3] or '1')
local debts = {}
local debt = 0
for i, key in ipairs(KEYS) do
  local stored = redis.call('GET', key)
  local tat = now
  if stored then tat = math.max(tonumber(stored), now) end
  debts[i] = tat - now
  if debts[i] > debt then debt = debts[i] end
end
local mode = ARGV[4] or 'charge'
local allowed = 0
if mode == 'peek' then
  if debt + step <= capacity then allowed = 1 end
elseif step < 0 or mode == 'force' or debt + step <= capacity then
  allowed = 1
  debt = 0
  for i, key in ipairs(KEYS) do
    local next = debts[i] + step
    if next <= 0 then
      redis.call('DEL', key)
    else
      redis.call('SET', key, string.format('%.0f', now + next), 'PX', math.ceil(next / 1000))
      if next > debt then debt = next end
    end
  end
end
local remaining = math.floor((capacity - debt) / interval)
-- Past the capacity (a forced charge), nothing remains and one more waits until the debt is back under it.
if remaining < 0 then remaining = 0 end
local untilNext = debt - capacity + (remaining + 1) * interval
return {allowed, remaining, math.ceil(untilNext / 1000)}
`;

/**
 * Defines the script as the client's `gcra` command: ioredis sends it by its SHA1 (EVALSHA) and, when the
 * server does not know it (a restart, a failover, SCRIPT FLUSH), sends its source once (EVAL).
 */
export function defineGcra(redis: Redis): void {
  // No numberOfKeys: a request may be counted in several buckets, so each call passes their number first.
  redis.defineCommand('gcra', { lua: GCRA_SCRIPT });
}

/** The answer of the script for one bucket. */
export interface RateDecision {
  allowed: boolean;
  /** Requests that would be allowed right now. */
  remaining: number;
  /** Milliseconds until one more request is available (for a refused request: until it would pass). */
  msUntilNext: number;
}

export function toRateDecision(reply: unknown): RateDecision {
  if (!Array.isArray(reply) || reply.length !== 3 || !reply.every((value) => typeof value === 'number')) {
    throw new Error(`unexpected GCRA reply ${JSON.stringify(reply)}`);
  }
  const [allowed, remaining, msUntilNext] = reply as [number, number, number];
  return { allowed: allowed === 1, remaining: Math.max(0, remaining), msUntilNext: Math.max(1, msUntilNext) };
}

/**
 * The Redis key of a bucket: `<prefix>ratelimit:<policy>:<subject>`. Every process that charges a bucket
 * names it through here, so that the gateway's `POST /readings` and the device gateway charge the very
 * same per-tenant readings bucket (policy `readings`, subject the tenant id).
 */
export function rateLimitKey(prefix: string, policy: string, subject: string): string {
  return `${prefix}ratelimit:${policy}:${subject}`;
}

/** The GCRA emission interval of a limit in whole microseconds (window / quota), as the script takes it. */
export function emissionIntervalMicros(limit: { quota: number; windowSeconds: number }): number {
  // Whole microseconds keep the script's arithmetic exact (doubles hold integers up to 2^53).
  return Math.max(1, Math.round((limit.windowSeconds * 1_000_000) / limit.quota));
}
