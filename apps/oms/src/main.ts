import '@tracking/core/source-maps';
import 'reflect-metadata';
import { createLogger } from '@tracking/core';
import { runService } from '@tracking/observability';
import { readOmsConfig } from './config.js';
import { omsReadiness } from './health/oms-readiness.js';
import { startOms } from './oms.app.js';

const logger = createLogger('oms');
await runService({
  name: 'oms',
  logger,
  ops: { port: 9101, shutdownTimeoutMs: 20000 },
  readConfig: () => readOmsConfig(),
  async start(config, metrics) {
    const app = await startOms(config, logger, metrics);
    logger.debug('oms is listening on NATS');
    // Draining: NATS routes new requests to the other replicas; the ones already here are answered.
    return { readiness: omsReadiness(app), stop: () => app.close() };
  },
});
