import { ConfigError, env, readConfig, type ConfigOf } from '@tracking/core';
import { checkNatsConfig, natsConfigSchema } from '@tracking/messaging';
import { outboxConfigSchema } from '@tracking/outbox';
import { retryScheduleReader } from '@tracking/webhooks';

export const omsConfigSchema = {
  OMS_DATABASE_URL: env.url({ default: 'postgres://postgres@127.0.0.1:5432/tracking_oms', protocols: ['postgres', 'postgresql'] }),
  OMS_DATABASE_POOL_SIZE: env.int({ default: 10, min: 1, max: 200 }),
  ...natsConfigSchema,
  ...outboxConfigSchema,
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
  /** The event feed (`GET /events`) keeps an event this many days after the OMS recorded it. */
  EVENTS_RETENTION_DAYS: env.int({ default: 30, min: 1, max: 3650 }),
  /** How often the workers delete events past their retention. */
  EVENTS_RETENTION_INTERVAL_MS: env.int({ default: 3600000, min: 100, max: 86400000 }),
  /** Webhook URLs may be plain `http` (development and tests only; docs/webhooks.md, "SSRF policy"). */
  WEBHOOK_ALLOW_INSECURE: env.bool({ default: false }),
  /** Webhook URLs may reach loopback, private, link-local and metadata addresses (development and tests only). */
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: env.bool({ default: false }),
  /** Whether this worker process sends webhook deliveries and dispatches events to webhooks (docs/webhook-delivery.md). */
  WEBHOOK_SENDER_ENABLED: env.bool({ default: true }),
  /** An attempt that has no 2xx answer (status and body) within this long failed. */
  WEBHOOK_TIMEOUT_MS: env.int({ default: 10000, min: 50, max: 120000 }),
  /** Delays before the 2nd, 3rd, ... attempt (ms, s, m, h); after the last one's failure the delivery is Failed. */
  WEBHOOK_RETRY_SCHEDULE: retryScheduleReader(),
  /** A webhook whose every attempt failed for this long is Disabled. */
  WEBHOOK_DISABLE_AFTER_MS: env.int({ default: 5 * 24 * 3600 * 1000, min: 100, max: 365 * 24 * 3600 * 1000 }),
  /**
   * How long a sender holds a delivery it claimed; a killed sender's claims come back after it. Must
   * exceed WEBHOOK_TIMEOUT_MS by the time to record an outcome.
   */
  WEBHOOK_LEASE_MS: env.int({ default: 60000, min: 200, max: 3600000 }),
  /** Requests one worker process has in flight at most, over all webhooks. */
  WEBHOOK_CONCURRENCY: env.int({ default: 256, min: 1, max: 10000 }),
  /** Requests one worker process has in flight at most to one webhook: a hanging receiver holds no more slots than this. */
  WEBHOOK_CONCURRENCY_PER_WEBHOOK: env.int({ default: 16, min: 1, max: 1000 }),
  /** Settled (Succeeded or Failed) webhook deliveries are deleted this many days after their last change. */
  WEBHOOK_DELIVERIES_RETENTION_DAYS: env.int({ default: 30, min: 1, max: 3650 }),
  /** How often the workers delete webhook deliveries past their retention (once across all workers). */
  WEBHOOK_DELIVERIES_RETENTION_INTERVAL_MS: env.int({ default: 3600000, min: 100, max: 86400000 }),
  /**
   * Deliveries the dispatch creates for one account's events per clock hour (UTC), over all its webhooks;
   * beyond it, deliveries are recorded Failed without being sent (docs/webhook-delivery.md, "Amplification bounds").
   */
  WEBHOOK_ACCOUNT_DELIVERIES_PER_HOUR: env.int({ default: 10000, min: 1, max: 10000000 }),
  /** Alerts one shipment may open per clock hour (UTC); beyond it one `alert.suppressed` per shipment and hour (docs/alerts-and-visits.md). */
  ALERTS_PER_SHIPMENT_PER_HOUR: env.int({ default: 20, min: 1, max: 100000 }),
  /**
   * How often a sender looks for due deliveries without being woken: retries falling due and leases of
   * killed workers lapsing (a delivery made due now wakes every sender through PostgreSQL's notification).
   */
  WEBHOOK_POLL_INTERVAL_MS: env.int({ default: 1000, min: 10, max: 60000 }),
  /** Whether this worker process evaluates readings into visits and alerts (docs/geofence-evaluation.md). */
  EVALUATION_ENABLED: env.bool({ default: true }),
  /** A shipment is evaluated once this much server time has passed since its newest ingested reading (a reorder buffer). */
  EVALUATION_DELAY_MS: env.int({ default: 500, min: 0, max: 60000 }),
  /** Server time after which a silent device no longer holds back its shipment's decisions (per-device watermarks). */
  EVALUATION_LATENESS_SECONDS: env.int({ default: 600, min: 0, max: 86400 }),
  /** How often the evaluation's timers (a silent device, SignalLoss) look for due shipments, once across workers. */
  EVALUATION_SWEEP_INTERVAL_MS: env.int({ default: 1000, min: 50, max: 3600000 }),
  /** Chunks of shipments one worker process evaluates at once, each a transaction on one pooled connection. */
  EVALUATION_CONCURRENCY: env.int({ default: 4, min: 1, max: 64 }),
  /**
   * Leases (docs/leases.md: the evaluation's partitions, the events feed): a lease not renewed for this
   * long lapses and another process takes it, so this is how long a dead holder's work waits.
   */
  LEASE_TTL_MS: env.int({ default: 5000, min: 500, max: 600000 }),
  /** How often a process renews its leases and looks at who else is alive (well under LEASE_TTL_MS). */
  LEASE_HEARTBEAT_MS: env.int({ default: 1000, min: 100, max: 60000 }),
};

export type OmsConfig = ConfigOf<typeof omsConfigSchema>;

export function readOmsConfig(source?: Record<string, string | undefined>): OmsConfig {
  const config = checkNatsConfig(readConfig(omsConfigSchema, source));
  if (config.WEBHOOK_LEASE_MS < config.WEBHOOK_TIMEOUT_MS + 100) {
    throw new ConfigError('WEBHOOK_LEASE_MS', `must exceed WEBHOOK_TIMEOUT_MS (${config.WEBHOOK_TIMEOUT_MS}) by at least 100 ms`);
  }
  if (config.LEASE_HEARTBEAT_MS * 2 > config.LEASE_TTL_MS) {
    throw new ConfigError('LEASE_HEARTBEAT_MS', `must be at most half of LEASE_TTL_MS (${config.LEASE_TTL_MS}), so that one late renewal loses no lease`);
  }
  return config;
}
