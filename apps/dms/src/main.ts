import '@tracking/core/source-maps';
import 'reflect-metadata';
import { createLogger } from '@tracking/core';
import { runService } from '@tracking/observability';
import { readDmsConfig } from './config.js';
import { startDms } from './dms.app.js';
import { dmsReadiness } from './health/dms-readiness.js';

const logger = createLogger('dms');
await runService({
  name: 'dms',
  logger,
  ops: { port: 9102, shutdownTimeoutMs: 20000 },
  readConfig: () => readDmsConfig(),
  async start(config, metrics) {
    const app = await startDms(config, logger, metrics);
    logger.debug('dms is listening on NATS');
    // Draining: NATS routes new requests to the other replicas; the ones already here are answered.
    return { readiness: dmsReadiness(app), stop: () => app.close() };
  },
});
