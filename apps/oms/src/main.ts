import 'reflect-metadata';
import { ConfigError, createLogger } from '@tracking/core';
import { readOmsConfig } from './config.js';
import { startOms } from './oms.app.js';

const logger = createLogger('oms');
try {
  const app = await startOms(readOmsConfig(), logger);
  logger.info('oms is listening on NATS');
  void app;
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`oms: ${error.message}\n`);
  } else {
    logger.fatal({ err: error }, 'oms failed to start');
  }
  process.exit(1);
}
