import '@tracking/core/source-maps';
import 'reflect-metadata';
import { createLogger } from '@tracking/core';
import { runService } from '@tracking/observability';
import { readOmsConfig } from './config.js';
import { workerReadiness } from './health/oms-readiness.js';
import { startOmsWorker } from './oms.app.js';
import { OperationWorker } from './operations/operation-worker.js';

const logger = createLogger('worker');
await runService({
  name: 'worker',
  logger,
  // The Kubernetes grace period of workers is 60 s: time for the chunks in progress to end.
  ops: { port: 9103, shutdownTimeoutMs: 50000 },
  readConfig: () => readOmsConfig(),
  async start(config, metrics) {
    const app = await startOmsWorker(config, logger, metrics);
    logger.debug('worker is consuming the operations queue');
    // Running operations stop after their current chunk and go back to the queue for another worker.
    return {
      readiness: workerReadiness(app),
      stop: async () => {
        app.get(OperationWorker).stopTakingWork();
        await app.close();
      },
    };
  },
});
