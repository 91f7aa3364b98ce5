import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleDestroy } from '@nestjs/common';
import { type Job, WaitingError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { type Logger, runInRequestContext } from '@tracking/core';
import type { OmsConfig } from '../config.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';
import { OperationMetrics } from './operation-metrics.js';
import { OPERATIONS_QUEUE, type OperationJob, OperationQueue, queuePrefix } from './operation-queue.js';
import { OperationRepository } from './operation.repository.js';
import { OperationRunner } from './operation-runner.js';

/** How many unsettled operations one reconciliation pass enqueues at most. */
const RECONCILE_BATCH = 1000;

/**
 * BullMQ's lock and stalled-check settings under which a killed worker's job is taken over within
 * `bound` ms. The lock lapses at most `lockDuration` after the kill (it is renewed at half time), and a
 * stalled check moves a job only once it was marked in the check before and no renewal came since: up
 * to two `stalledInterval`s more. With the lock at half the bound and the check at a quarter,
 * lapse + two checks = the bound. (The lock and check both at 30 s let takeovers take 53-76 s.)
 */
export function takeoverSettings(bound: number): { lockDuration: number; stalledInterval: number } {
  return { lockDuration: Math.floor(bound / 2), stalledInterval: Math.floor(bound / 4) };
}

/**
 * A worker process's consumer of the operations queue. Workers scale out freely: BullMQ hands each job
 * to one worker at a time and gives a killed worker's job to another once its lock expires; the
 * operation's progress in PostgreSQL makes the next worker continue where the last one stopped.
 *
 * PostgreSQL, not Redis, is the record of what is left to do: every worker periodically enqueues the
 * operations that are not settled yet (an enqueue that failed after the 202, a queue that lost its
 * data); the job id is the operation id, so an operation already queued is not queued twice.
 */
@Injectable()
export class OperationWorker implements OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown {
  private worker?: Worker<OperationJob>;
  private connection?: Redis;
  private reconcileTimer?: NodeJS.Timeout;
  /** Aborted at shutdown: running operations stop after their current chunk and go back to the queue. */
  private readonly stopping = new AbortController();

  constructor(
    private readonly runner: OperationRunner,
    private readonly operations: OperationRepository,
    private readonly queue: OperationQueue,
    private readonly metrics: OperationMetrics,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // BullMQ's blocking connection must retry forever rather than fail commands while Redis restarts.
    this.connection = new Redis(this.config.REDIS_URL, { maxRetriesPerRequest: null });
    this.connection.on('error', (error) => this.logger.warn({ err: error }, 'redis connection error'));
    // Everything a job does, its log lines and its calls to the DMS, carries the id of the request that created it.
    const processor = (job: Job<OperationJob>, token?: string) =>
      runInRequestContext({ requestId: job.data.requestId }, () => this.process(job, token));
    this.worker = new Worker<OperationJob>(OPERATIONS_QUEUE, processor, {
      connection: this.connection,
      prefix: queuePrefix(this.config),
      concurrency: this.config.WORKER_CONCURRENCY,
      ...takeoverSettings(this.config.WORKER_LOCK_DURATION_MS),
      // A job that stalls (its worker died) is resumed, however often that happens: progress is kept.
      maxStalledCount: Number.MAX_SAFE_INTEGER,
    });
    this.worker.on('error', (error) => this.logger.warn({ err: error }, 'operations worker error'));
    this.worker.on('failed', (job, error) => void this.onFailed(job, error));
    await this.reconcile();
    this.reconcileTimer = setInterval(() => void this.reconcile(), this.config.WORKER_RECONCILE_INTERVAL_MS);
    this.reconcileTimer.unref();
  }

  private async process(job: Job<OperationJob>, token?: string): Promise<void> {
    const { operationId } = job.data;
    this.logger.info({ operationId, attempt: job.attemptsMade + 1 }, 'operation started');
    if (await this.runner.run(operationId, this.stopping.signal)) {
      this.metrics.jobEnded('completed');
      this.logger.info({ operationId }, 'operation finished');
      return;
    }
    // Shutting down: hand the job back (no attempt used up); another worker continues at the next chunk.
    await job.moveToWait(token);
    this.metrics.jobEnded('handed_back');
    this.logger.info({ operationId }, 'operation handed back to the queue');
    throw new WaitingError();
  }

  /** After the last attempt the operation ends as Failed, with what it processed. */
  private async onFailed(job: Job<OperationJob> | undefined, error: Error): Promise<void> {
    if (!job) return;
    this.metrics.jobEnded('failed');
    const { operationId, requestId } = job.data;
    const final = job.attemptsMade >= (job.opts.attempts ?? 1);
    this.logger.error({ err: error, operationId, requestId, attempt: job.attemptsMade, final }, 'operation attempt failed');
    if (!final) return;
    try {
      await this.runner.abandon(operationId);
    } catch (abandonError) {
      this.logger.error({ err: abandonError, operationId }, 'could not mark the operation as failed');
    }
  }

  /** Enqueues the operations PostgreSQL holds as unsettled; those already queued stay as they are. */
  private async reconcile(): Promise<void> {
    try {
      await this.queue.enqueue(await this.operations.unsettledIds(RECONCILE_BATCH));
    } catch (error) {
      this.logger.warn({ err: error }, 'reconciliation of operations failed; retrying at the next interval');
    }
  }

  /**
   * Running operations stop after the chunk in progress and go back to the queue. The worker process calls
   * it as soon as its shutdown starts, before Nest's hooks, because the other modules may take a while to
   * stop their consumers and every chunk completed meanwhile is a chunk this worker should have handed back;
   * `onModuleDestroy` calls it too, for applications closed directly.
   */
  stopTakingWork(): void {
    if (this.stopping.signal.aborted) return;
    clearInterval(this.reconcileTimer);
    this.stopping.abort();
    this.logger.info('operations worker stopping: operations in progress go back to the queue after their chunk');
  }

  onModuleDestroy(): void {
    this.stopTakingWork();
  }

  /** Waits for the running operations to finish their chunk and go back to the queue; then closes Redis. */
  async onApplicationShutdown(): Promise<void> {
    await this.worker?.close();
    this.connection?.disconnect();
  }
}
