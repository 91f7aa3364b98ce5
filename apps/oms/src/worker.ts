import 'reflect-metadata';
import { ConfigError, createLogger } from '@tracking/core';
import { readOmsConfig } from './config.js';
import { startOmsWorker } from './oms.app.js';

const logger = createLogger('worker');
try {
  await startOmsWorker(readOmsConfig(), logger);
  logger.info('worker is consuming the operations queue');
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`worker: ${error.message}\n`);
  } else {
    logger.fatal({ err: error }, 'worker failed to start');
  }
  process.exit(1);
}
