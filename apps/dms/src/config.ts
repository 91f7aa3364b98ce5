import { env, readConfig, type ConfigOf } from '@tracking/core';
import { checkNatsConfig, natsConfigSchema } from '@tracking/messaging';
import { outboxConfigSchema } from '@tracking/outbox';

export const dmsConfigSchema = {
  DMS_DATABASE_URL: env.url({ default: 'postgres://postgres@127.0.0.1:5432/tracking_dms', protocols: ['postgres', 'postgresql'] }),
  DMS_DATABASE_POOL_SIZE: env.int({ default: 10, min: 1, max: 200 }),
  ...natsConfigSchema,
  ...outboxConfigSchema,
  /**
   * The largest difference between an OMS host's clock and the DMS's that the guard against late links
   * allows for (see `ReleasedTargets`); also the time for which a marker left by a close that did not
   * commit may still refuse links.
   */
  DMS_CLOCK_SKEW_MS: env.int({ default: 1000, min: 0, max: 60000 }),
  /** Readings recorded longer ago are refused, and their daily partitions dropped (docs/readings.md). */
  READINGS_RETENTION_DAYS: env.int({ default: 90, min: 1, max: 3650 }),
  /** Daily partitions of readings created ahead of today, at start and by the maintenance timer. */
  READINGS_PARTITIONS_AHEAD_DAYS: env.int({ default: 3, min: 1, max: 60 }),
  /** How often each DMS replica creates partitions ahead and drops those past the retention. */
  READINGS_MAINTENANCE_INTERVAL_MS: env.int({ default: 3600000, min: 100, max: 86400000 }),
  /**
   * The longest a track's statements may run when the request gives no deadline; with one, the time left
   * before it, less a margin, and never more than this (docs/tracks.md, "Cost").
   */
  TRACK_QUERY_TIMEOUT_MS: env.int({ default: 5000, min: 100, max: 120000 }),
  /** Tracks one tenant may have read at once on one DMS replica; one more is refused with 429 (docs/tracks.md). */
  TRACK_CONCURRENCY_PER_TENANT: env.int({ default: 2, min: 1, max: 100 }),
  CURSOR_SECRET: env.secret({ developmentDefault: 'local-development-cursor-secret', minLength: 16 }),
};

export type DmsConfig = ConfigOf<typeof dmsConfigSchema>;

export function readDmsConfig(source?: Record<string, string | undefined>): DmsConfig {
  return checkNatsConfig(readConfig(dmsConfigSchema, source));
}
