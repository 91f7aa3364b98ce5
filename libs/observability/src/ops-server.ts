import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@tracking/core';
import type { Readiness } from './readiness.js';
import type { ServiceMetrics } from './service-metrics.js';

export interface OpsServerOptions {
  host: string;
  /** 0 picks a free port (tests); the bound one is `OpsServer.port`. */
  port: number;
  metrics: ServiceMetrics;
  readiness: Readiness;
  logger: Logger;
}

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The process's operations endpoints on their own port, apart from any public API: `/health/live`
 * (the event loop answers and no connection is closed for good), `/health/ready` (the process's own dependencies) and `/metrics`
 * (Prometheus text). Kubernetes probes and scrapes this port; it is never exposed outside.
 */
export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const server = createServer((request, response) => {
    handle(request, response, options).catch((error: unknown) => {
      options.logger.error({ err: error, path: request.url }, 'ops endpoint failed');
      if (!response.headersSent) send(response, 500, 'application/json', JSON.stringify({ status: 'error' }));
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(request: IncomingMessage, response: ServerResponse, options: OpsServerOptions): Promise<void> {
  const path = (request.url ?? '/').split('?', 1)[0];
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    send(response, 405, 'application/json', JSON.stringify({ status: 'method not allowed' }), { allow: 'GET, HEAD' });
    return;
  }
  switch (path) {
    case '/health/live': {
      const { live, body } = options.readiness.liveness();
      send(response, live ? 200 : 503, 'application/json', JSON.stringify(body));
      return;
    }
    case '/health/ready': {
      const { ready, body } = await options.readiness.report();
      send(response, ready ? 200 : 503, 'application/json', JSON.stringify(body));
      return;
    }
    case '/metrics':
      send(response, 200, options.metrics.registry.contentType, await options.metrics.registry.metrics());
      return;
    default:
      send(response, 404, 'application/json', JSON.stringify({ status: 'not found' }));
  }
}

function send(response: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store', ...headers });
  response.end(body);
}
