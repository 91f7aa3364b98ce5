import { randomBytes } from 'node:crypto';
import { createLogger } from '@tracking/core';
import { Redis } from 'ioredis';
import { afterEach, describe, it } from 'vitest';
import { IntervalJob, SCHEDULER_CHECK_MIN_MS } from '../../apps/oms/src/scheduling/interval-job.js';
import { eventually } from '../support/eventually.js';
import { OwnRedisServer } from '../support/redis-server.js';

/**
 * The OMS's periodic jobs (the evaluation's timers, operation retention) on a redis-server of the test's
 * own, without persistence, that the test restarts: Redis comes back empty, job scheduler included.
 */
const logger = createLogger('test', process.env.LOG_LEVEL ?? 'silent');
const EVERY_MS = 100;

let redis: OwnRedisServer | undefined;
let job: IntervalJob | undefined;
afterEach(async () => {
  await redis?.start();
  await job?.stop();
  await redis?.stop();
  job = undefined;
  redis = undefined;
});

async function counting(server: OwnRedisServer): Promise<{ runs: () => number }> {
  let runs = 0;
  job = new IntervalJob({
    config: { REDIS_URL: server.url, REDIS_KEY_PREFIX: `test:interval_${randomBytes(4).toString('hex')}:` },
    queue: 'interval-test',
    everyMs: EVERY_MS,
    run: async () => {
      runs++;
    },
    logger,
    what: 'interval test',
  });
  await job.start();
  await eventually(() => runs, (n) => n >= 2, 'the job runs');
  return { runs: () => runs };
}

describe('a periodic job (IntervalJob)', { timeout: 60000 }, () => {
  it('runs again after Redis restarts without its data (its scheduler is set again on reconnection)', async () => {
    redis = await OwnRedisServer.start();
    const { runs } = await counting(redis);

    await redis.stop();
    await redis.start();
    const before = runs();
    // Without the scheduler nothing runs again; with it, a run every EVERY_MS.
    await eventually(runs, (n) => n >= before + 3, 'the job runs after the restart', 10000);
  });

  it('runs again after Redis is flushed without a reconnection (a worker checks its scheduler periodically)', async () => {
    redis = await OwnRedisServer.start();
    const { runs } = await counting(redis);

    const admin = new Redis(redis.url);
    try {
      await admin.flushall();
    } finally {
      admin.disconnect();
    }
    const before = runs();
    await eventually(runs, (n) => n >= before + 3, 'the job runs after the flush', SCHEDULER_CHECK_MIN_MS + 5000);
  });
});
