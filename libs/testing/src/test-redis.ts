import { Redis } from 'ioredis';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Keys of runs older than this are left-overs of killed runs and are deleted at the next start. */
const STALE_AFTER_MS = 6 * 60 * 60 * 1000;

/** The URL of the Redis server tests use. */
export function testRedisUrl(): string {
  return REDIS_URL;
}

async function withRedis<T>(work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

async function deleteMatching(redis: Redis, pattern: string, keep: (key: string) => boolean = () => false): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    const doomed = keys.filter((key) => !keep(key));
    if (doomed.length > 0) await redis.unlink(...doomed);
  } while (cursor !== '0');
}

/** Deletes every key that starts with `prefix` (which must not contain glob characters). */
export async function deleteRedisKeys(prefix: string): Promise<void> {
  if (/[*?[\]\\]/.test(prefix)) throw new Error(`not a literal key prefix: ${prefix}`);
  await withRedis((redis) => deleteMatching(redis, `${prefix}*`));
}

/** Deletes the keys of test runs (`test:trk_<epoch>_...`) that started more than six hours ago. */
export async function deleteStaleTestKeys(): Promise<void> {
  const cutoff = (Date.now() - STALE_AFTER_MS) / 1000;
  await withRedis((redis) =>
    deleteMatching(redis, 'test:trk_*', (key) => {
      const started = Number(/^test:trk_(\d+)_/.exec(key)?.[1]);
      return !(Number.isFinite(started) && started < cutoff);
    }),
  );
}
