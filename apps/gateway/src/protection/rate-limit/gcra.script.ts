import type { Redis, Result } from 'ioredis';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** The GCRA script below, defined on the client by `defineGcra`. */
    gcra(bucket: string, intervalMicros: number, burst: number): Result<unknown, Context>;
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
 * KEYS[1] the bucket; ARGV[1] emission interval in µs; ARGV[2] burst.
 * Returns {allowed (1 or 0), remaining requests now, ms until one more request is available}.
 */
const GCRA_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local interval = tonumber(ARGV[1])
local capacity = interval * tonumber(ARGV[2])
local stored = redis.call('GET', KEYS[1])
local tat = now
if stored then tat = math.max(tonumber(stored), now) end
local debt = tat - now
local allowed = 0
if debt + interval <= capacity then
  allowed = 1
  debt = debt + interval
  redis.call('SET', KEYS[1], string.format('%.0f', now + debt), 'PX', math.ceil(debt / 1000))
end
local remaining = math.floor((capacity - debt) / interval)
local untilNext = debt - capacity + (remaining + 1) * interval
return {allowed, remaining, math.ceil(untilNext / 1000)}
`;

/**
 * Defines the script as the client's `gcra` command: ioredis sends it by its SHA1 (EVALSHA) and, when the
 * server does not know it (a restart, a failover, SCRIPT FLUSH), sends its source once (EVAL).
 */
export function defineGcra(redis: Redis): void {
  redis.defineCommand('gcra', { numberOfKeys: 1, lua: GCRA_SCRIPT });
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
