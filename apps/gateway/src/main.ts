import 'reflect-metadata';
import { ConfigError, createLogger } from '@tracking/core';
import { readGatewayConfig } from './config.js';
import { startGateway } from './gateway.app.js';

const logger = createLogger('gateway');
try {
  const config = readGatewayConfig();
  await startGateway(config, logger);
  logger.info({ port: config.PORT }, 'gateway is listening');
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`gateway: ${error.message}\n`);
  } else {
    logger.fatal({ err: error }, 'gateway failed to start');
  }
  process.exit(1);
}
