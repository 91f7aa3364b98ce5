import { env, readConfig, type ConfigOf } from '@tracking/core';
import { checkNatsConfig, natsConfigSchema } from '@tracking/messaging';

export const omsConfigSchema = {
  OMS_DATABASE_URL: env.url({ default: 'postgres://postgres@127.0.0.1:5432/tracking_oms', protocols: ['postgres', 'postgresql'] }),
  OMS_DATABASE_POOL_SIZE: env.int({ default: 10, min: 1, max: 200 }),
  ...natsConfigSchema,
  /**
   * How long the OMS waits for the DMS (device assignment and release) before failing the request with
   * 504 and rolling back; kept below the gateway's RPC_TIMEOUT_MS, so that the gateway hears the outcome of the
   * OMS's transaction (and the client sees its cause) rather than timing out first.
   */
  OMS_RPC_TIMEOUT_MS: env.int({ default: 4000, min: 100, max: 120000 }),
  CURSOR_SECRET: env.secret({ developmentDefault: 'local-development-cursor-secret', minLength: 16 }),
  /** Redis holds the queue of bulk operations (BullMQ); the operations themselves live in PostgreSQL. */
  REDIS_URL: env.url({ default: 'redis://127.0.0.1:6379', protocols: ['redis', 'rediss'] }),
  REDIS_KEY_PREFIX: env.keyPrefix({ default: 'tracking:' }),
  /** Operations one worker process runs at once. */
  WORKER_CONCURRENCY: env.int({ default: 2, min: 1, max: 64 }),
  /** Entries decided per transaction (and per DMS call). */
  WORKER_CHUNK_SIZE: env.int({ default: 1000, min: 1, max: 5000 }),
  /**
   * How long one attempt of an operation waits out an unavailable dependency (the DMS, or either
   * database) without using up a queue attempt; an outage that lasts longer counts as a failed attempt.
   */
  WORKER_OUTAGE_LIMIT_MS: env.int({ default: 600000, min: 1000, max: 86400000 }),
  /**
   * The bound on taking over a killed worker's operation: another worker runs it within this long. BullMQ
   * needs up to its lock duration for the lock to lapse and up to two stalled checks to notice, so the lock
   * lasts half of this and the check runs every quarter (operation-worker.ts).
   */
  WORKER_LOCK_DURATION_MS: env.int({ default: 30000, min: 500, max: 600000 }),
  /** At most this many Pending or Running operations per account; a bulk request over it gets 429. */
  OPERATIONS_MAX_UNFINISHED: env.int({ default: 10, min: 1, max: 10000 }),
  /** At most this many entries not yet processed, over all unfinished operations of an account; over it, 429. */
  OPERATIONS_MAX_PENDING_ENTRIES: env.int({ default: 50000, min: 1, max: 100000000 }),
  /** Finished operations, their entries and results (and the DMS's outcomes) are deleted this many days after they finished. */
  OPERATIONS_RETENTION_DAYS: env.int({ default: 30, min: 1, max: 3650 }),
  /** How often the retention job runs (once across all workers). */
  OPERATIONS_RETENTION_INTERVAL_MS: env.int({ default: 3600000, min: 100, max: 86400000 }),
  /** How often a worker enqueues operations that PostgreSQL holds as unfinished but the queue lost. */
  WORKER_RECONCILE_INTERVAL_MS: env.int({ default: 30000, min: 100, max: 3600000 }),
};

export type OmsConfig = ConfigOf<typeof omsConfigSchema>;

export function readOmsConfig(source?: Record<string, string | undefined>): OmsConfig {
  return checkNatsConfig(readConfig(omsConfigSchema, source));
}
