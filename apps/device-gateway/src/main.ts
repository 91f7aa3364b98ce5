import '@tracking/core/source-maps';
import { createLogger } from '@tracking/core';
import { runService } from '@tracking/observability';
import { readDeviceGatewayConfig } from './config.js';
import { startDeviceGateway } from './device-gateway.js';

const logger = createLogger('device-gateway');
await runService({
  name: 'device-gateway',
  logger,
  ops: { port: 9104, shutdownTimeoutMs: 25000 },
  readConfig: () => readDeviceGatewayConfig(),
  async start(config, metrics) {
    const gateway = await startDeviceGateway(config, logger, metrics);
    return { readiness: gateway.readiness, stop: () => gateway.stop(), details: { listeners: gateway.listening } };
  },
});
