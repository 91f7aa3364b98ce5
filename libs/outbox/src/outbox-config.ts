import { env } from '@tracking/core';

/** The variables of every service that writes an outbox and relays it (OMS, DMS). */
export const outboxConfigSchema = {
  /** Whether this process relays its database's outbox (one relay publishes at a time whatever this says). */
  OUTBOX_RELAY_ENABLED: env.bool({ default: true }),
  /** How often a relay looks at the outbox without a notification; the bound on a lost one. */
  OUTBOX_POLL_INTERVAL_MS: env.int({ default: 1000, min: 10, max: 60000 }),
  /** How long the events stream keeps an event: the longest a consumer (feed, webhooks) may be down without losing any. */
  EVENTS_STREAM_MAX_AGE_HOURS: env.int({ default: 168, min: 1, max: 8760 }),
  /** How long the readings stream keeps a batch: the longest its consumers (the OMS's positions) may be down without losing any. */
  READINGS_STREAM_MAX_AGE_HOURS: env.int({ default: 24, min: 1, max: 8760 }),
  /**
   * Partitions of the readings stream (docs/geofence-evaluation.md, "Ownership"): a shipment's readings go on
   * one of them by a hash of its id, and each is evaluated by one worker at a time. Fixed for a deployment:
   * the DMS publishes and the OMS consumes with the same number, and changing it moves shipments between
   * partitions (drain the stream first).
   */
  READINGS_PARTITIONS: env.int({ default: 32, min: 1, max: 1024 }),
  /** How long JetStream remembers an event id to drop a republished duplicate. */
  EVENTS_STREAM_DUPLICATE_WINDOW_MS: env.int({ default: 600000, min: 1000, max: 86400000 }),
  /** Copies of each stream in a JetStream cluster. */
  JETSTREAM_REPLICAS: env.int({ default: 1, min: 1, max: 5 }),
};
