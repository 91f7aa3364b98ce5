import 'reflect-metadata';
import { ConfigError, createLogger } from '@tracking/core';
import { readDmsConfig } from './config.js';
import { startDms } from './dms.app.js';

const logger = createLogger('dms');
try {
  const app = await startDms(readDmsConfig(), logger);
  logger.info('dms is listening on NATS');
  void app;
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`dms: ${error.message}\n`);
  } else {
    logger.fatal({ err: error }, 'dms failed to start');
  }
  process.exit(1);
}
