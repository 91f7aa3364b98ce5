import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import { ServiceMetrics } from '@tracking/observability';
import { Counter, Gauge } from 'prom-client';
import { OMS_LOGGER } from '../tokens.js';
import { OperationQueue } from './operation-queue.js';

/** How a worker's attempt at a job ended. */
export type JobOutcome = 'completed' | 'failed' | 'handed_back';

/** A scrape must not hang on an unreachable Redis. */
const DEPTH_TIMEOUT_MS = 1000;

/**
 * The bulk-job worker's metrics: the queue's depth by state, read from Redis at each scrape (the
 * backlog an autoscaler can follow), and how the jobs this worker ran ended.
 */
@Injectable()
export class OperationMetrics {
  private readonly jobs: Counter<'outcome'>;

  constructor(metrics: ServiceMetrics, queue: OperationQueue, @Inject(OMS_LOGGER) logger: Logger) {
    new Gauge({
      name: 'operations_queue_jobs',
      help: 'Jobs of the bulk operations queue by state (waiting, active, delayed, failed), shared by every worker.',
      labelNames: ['state'] as const,
      registers: [metrics.registry],
      async collect() {
        try {
          const depth = await withTimeout(queue.depth(), DEPTH_TIMEOUT_MS);
          for (const [state, jobs] of Object.entries(depth)) this.set({ state }, jobs);
        } catch (error) {
          // No number is better than a stale one; readiness reports Redis.
          this.reset();
          logger.debug({ err: error }, 'queue depth unavailable for metrics');
        }
      },
    });
    this.jobs = new Counter({
      name: 'operations_jobs_total',
      help: 'Attempts at bulk operation jobs by this worker, by outcome (completed, failed, handed_back at shutdown).',
      labelNames: ['outcome'] as const,
      registers: [metrics.registry],
    });
    for (const outcome of ['completed', 'failed', 'handed_back'] satisfies JobOutcome[]) this.jobs.inc({ outcome }, 0);
  }

  jobEnded(outcome: JobOutcome): void {
    this.jobs.inc({ outcome });
  }
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
