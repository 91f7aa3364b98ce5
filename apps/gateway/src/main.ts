import '@tracking/core/source-maps';
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@tracking/core';
import { runService } from '@tracking/observability';
import { readGatewayConfig } from './config.js';
import { startGateway } from './gateway.app.js';
import { ConnectionDrain } from './health/connection-drain.js';
import { gatewayReadiness } from './health/gateway-readiness.js';

const logger = createLogger('gateway');
await runService({
  name: 'gateway',
  logger,
  // The Kubernetes grace period is 30 s, of which the preStop hook takes 5.
  ops: { port: 9100, shutdownTimeoutMs: 20000 },
  readConfig: () => readGatewayConfig(),
  async start(config, metrics) {
    const app = await startGateway(config, logger, metrics);
    const port = (app.getHttpServer().address() as AddressInfo).port;
    logger.debug({ port }, 'gateway is listening');
    // Clients get a moment to close their keep-alive connections (every response now says
    // `Connection: close`); then closing the HTTP server stops accepting, closes the idle connections
    // and waits for the requests in flight; NATS, Redis and the database close after them.
    const stop = async () => {
      await app.get(ConnectionDrain).drain(app.getHttpServer(), config.HTTP_DRAIN_MS);
      await app.close();
    };
    return { readiness: gatewayReadiness(app), stop, details: { port } };
  },
});
