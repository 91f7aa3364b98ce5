import { env, readConfig, type ConfigOf } from '@tracking/core';
import { checkNatsConfig, natsConfigSchema } from '@tracking/messaging';

export const dmsConfigSchema = {
  DMS_DATABASE_URL: env.url({ default: 'postgres://postgres@127.0.0.1:5432/tracking_dms', protocols: ['postgres', 'postgresql'] }),
  DMS_DATABASE_POOL_SIZE: env.int({ default: 10, min: 1, max: 200 }),
  ...natsConfigSchema,
  /**
   * The largest difference between an OMS host's clock and the DMS's that the guard against late links
   * allows for (see `ReleasedTargets`); also the time for which a marker left by a close that did not
   * commit may still refuse links.
   */
  DMS_CLOCK_SKEW_MS: env.int({ default: 1000, min: 0, max: 60000 }),
  CURSOR_SECRET: env.secret({ developmentDefault: 'local-development-cursor-secret', minLength: 16 }),
};

export type DmsConfig = ConfigOf<typeof dmsConfigSchema>;

export function readDmsConfig(source?: Record<string, string | undefined>): DmsConfig {
  return checkNatsConfig(readConfig(dmsConfigSchema, source));
}
