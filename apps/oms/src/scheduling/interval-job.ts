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

/**
 * A job that runs once per interval across every worker process: a BullMQ job scheduler with a fixed id,
 * which each worker upserts at start (the same id, so there is one), and a worker of concurrency 1 on the
 * job's own queue, so each run happens on one of them.
 */
export class IntervalJob {
  private connection?: Redis;
  private queue?: Queue;
  private worker?: Worker;

  constructor(private readonly options: IntervalJobOptions) {}

  async start(): Promise<void> {
    const { config, queue: name, everyMs, run, logger, what } = this.options;
    this.connection = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
    this.connection.on('error', (error) => logger.warn({ err: error }, `redis connection error (${what})`));
    const prefix = queuePrefix(config);
    this.queue = new Queue(name, { connection: this.connection, prefix });
    this.queue.on('error', () => undefined);
    await this.queue.upsertJobScheduler(name, { every: everyMs }, { name: 'run', opts: { removeOnComplete: true, removeOnFail: 100 } });
    this.worker = new Worker(name, run, { connection: this.connection, prefix, concurrency: 1 });
    this.worker.on('error', (error) => logger.warn({ err: error }, `${what} worker error`));
    this.worker.on('failed', (_job, error) => logger.warn({ err: error }, `${what} failed; it runs again at the next interval`));
  }

  /** Stops taking runs and waits for the one in progress. */
  async stop(): Promise<void> {
    await this.worker?.close();
    await this.queue?.close();
    this.connection?.disconnect();
  }
}
