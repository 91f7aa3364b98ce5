import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from '@tracking/core';
import type { OmsConfig } from '../config.js';
import { queuePrefix } from '../operations/operation-queue.js';

export interface IntervalJobOptions {
  config: Pick<OmsConfig, 'REDIS_URL' | 'REDIS_KEY_PREFIX'>;
  /** The job's own queue; also the id of its job scheduler. */
  queue: string;
  everyMs: number;
  run: () => Promise<unknown>;
  logger: Logger;
  /** Named in the log lines: "<what> failed; it runs again at the next interval". */
  what: string;
}

/** How often a worker checks that the job scheduler still exists: every interval, within these bounds. */
export const SCHEDULER_CHECK_MIN_MS = 5000;
export const SCHEDULER_CHECK_MAX_MS = 60000;

/**
 * A job that runs once per interval across every worker process: a BullMQ job scheduler with a fixed id,
 * which each worker upserts at start (the same id, so there is one), and a worker of concurrency 1 on the
 * job's own queue, so each run happens on one of them.
 *
 * The scheduler lives in Redis only: a Redis that restarts without its data (or is flushed) loses it, and
 * nothing would run again until a worker restarted. So each worker re-asserts it: whenever its Redis
 * connection is ready again after a reconnection, and every interval (at least every
 * `SCHEDULER_CHECK_MIN_MS`, at most every `SCHEDULER_CHECK_MAX_MS`) for a flush without a reconnection. It
 * checks that the scheduler and its next job exist (two reads) and upserts the scheduler only when not, so
 * the schedule of a scheduler that is there is left alone.
 */
export class IntervalJob {
  private connection?: Redis;
  private queue?: Queue;
  private worker?: Worker;
  private check?: NodeJS.Timeout;
  private checking?: Promise<void>;
  private stopped = false;

  constructor(private readonly options: IntervalJobOptions) {}

  async start(): Promise<void> {
    const { config, queue: name, everyMs, run, logger, what } = this.options;
    this.connection = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
    this.connection.on('error', (error) => logger.warn({ err: error }, `redis connection error (${what})`));
    const prefix = queuePrefix(config);
    this.queue = new Queue(name, { connection: this.connection, prefix });
    this.queue.on('error', () => undefined);
    await this.upsert(this.queue);
    this.worker = new Worker(name, run, { connection: this.connection, prefix, concurrency: 1 });
    this.worker.on('error', (error) => logger.warn({ err: error }, `${what} worker error`));
    this.worker.on('failed', (_job, error) => logger.warn({ err: error }, `${what} failed; it runs again at the next interval`));
    // 'ready' comes again after every reconnection (the first one has passed: the upsert above ran on it).
    this.connection.on('ready', () => void this.reassert());
    this.check = setInterval(() => void this.reassert(), Math.min(Math.max(everyMs, SCHEDULER_CHECK_MIN_MS), SCHEDULER_CHECK_MAX_MS));
    this.check.unref();
  }

  private upsert(queue: Queue): Promise<unknown> {
    const { queue: name, everyMs } = this.options;
    return queue.upsertJobScheduler(name, { every: everyMs }, { name: 'run', opts: { removeOnComplete: true, removeOnFail: 100 } });
  }

  /** Puts the job scheduler back if Redis lost it (or its next job); one check at a time. */
  private reassert(): Promise<void> {
    this.checking ??= this.findOrRestore().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async findOrRestore(): Promise<void> {
    const { queue: name, logger, what } = this.options;
    const queue = this.queue;
    if (this.stopped || !queue) return;
    try {
      const scheduler = await queue.getJobScheduler(name);
      const next = scheduler?.next;
      if (next !== undefined && (await queue.getJobState(`repeat:${name}:${next}`)) !== 'unknown') return;
      if (this.stopped) return;
      await this.upsert(queue);
      logger.warn({ queue: name }, `${what}: its job scheduler was gone from Redis (restarted without its data or flushed); set it again`);
    } catch (error) {
      if (!this.stopped) logger.warn({ err: error, queue: name }, `${what}: cannot check its job scheduler in Redis; checking again later`);
    }
  }

  /** Stops taking runs and waits for the one in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.check);
    // A check in progress is not waited for: with Redis away it would wait for the reconnection. It
    // upserts nothing once stopped, and the disconnection below ends its commands.
    await this.worker?.close();
    await this.queue?.close();
    this.connection?.disconnect();
  }
}
