import { env, readConfig, type ConfigOf } from '@tracking/core';
import { checkNatsConfig, natsConfigSchema } from '@tracking/messaging';

export const dmsConfigSchema = {
  DMS_DATABASE_URL: env.url({ default: 'postgres://postgres@127.0.0.1:5432/tracking_dms', protocols: ['postgres', 'postgresql'] }),
  DMS_DATABASE_POOL_SIZE: env.int({ default: 10, min: 1, max: 200 }),
  ...natsConfigSchema,
  CURSOR_SECRET: env.secret({ developmentDefault: 'local-development-cursor-secret', minLength: 16 }),
};

export type DmsConfig = ConfigOf<typeof dmsConfigSchema>;

export function readDmsConfig(source?: Record<string, string | undefined>): DmsConfig {
  return checkNatsConfig(readConfig(dmsConfigSchema, source));
}
