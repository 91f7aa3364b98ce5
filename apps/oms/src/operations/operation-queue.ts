import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { type JobsOptions, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { OmsConfig } from '../config.js';
import { OMS_CONFIG } from '../tokens.js';

export const OPERATIONS_QUEUE = 'operations';

/** What a job carries: the operation to run (everything else is read from PostgreSQL). */
export interface OperationJob {
  operationId: string;
  requestId?: string;
}

/** BullMQ's key prefix: every key of the queue starts with `REDIS_KEY_PREFIX`. */
export function queuePrefix(config: Pick<OmsConfig, 'REDIS_KEY_PREFIX'>): string {
  return `${config.REDIS_KEY_PREFIX}bull`;
}

/**
 * One job per operation, its id the operation's, so that enqueueing an operation twice (after the API
 * request, and again by a worker's reconciliation) wakes one worker. Attempts and backoff cover errors a
 * worker did not expect; the operation's own progress makes each attempt continue where the last stopped.
 */
const JOB_OPTIONS: JobsOptions = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600 },
};

/**
 * The producer side of the operations queue, used by the OMS when it records an operation. Redis being
 * unreachable fails fast here (no offline queue): the operation is already durable in PostgreSQL, and
 * the workers' reconciliation enqueues it once Redis is back.
 */
@Injectable()
export class OperationQueue implements OnApplicationShutdown {
  private readonly connection: Redis;
  private readonly queue: Queue<OperationJob>;

  constructor(@Inject(OMS_CONFIG) config: OmsConfig) {
    this.connection = new Redis(config.REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 });
    // ioredis reports every failed reconnection as an 'error' event; without a listener Node would crash.
    this.connection.on('error', () => undefined);
    this.queue = new Queue<OperationJob>(OPERATIONS_QUEUE, { connection: this.connection, prefix: queuePrefix(config) });
    this.queue.on('error', () => undefined);
  }

  async enqueue(operationIds: string[], requestId?: string): Promise<void> {
    if (operationIds.length === 0) return;
    await this.queue.addBulk(
      operationIds.map((operationId) => ({ name: 'run', data: { operationId, requestId }, opts: { ...JOB_OPTIONS, jobId: operationId } })),
    );
  }

  /** Whether Redis answers now (readiness); fails at once while the connection is down. */
  async ping(): Promise<void> {
    await this.connection.ping();
  }

  /** Jobs waiting or running, for metrics and tests. */
  async depth(): Promise<{ waiting: number; active: number; delayed: number; failed: number }> {
    const counts = await this.queue.getJobCounts('waiting', 'active', 'delayed', 'failed');
    return { waiting: counts.waiting ?? 0, active: counts.active ?? 0, delayed: counts.delayed ?? 0, failed: counts.failed ?? 0 };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
    this.connection.disconnect();
  }
}
