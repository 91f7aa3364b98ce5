import type { Logger } from '@tracking/core';
import { LATENCY_BUCKETS, type ServiceMetrics } from '@tracking/observability';
import type { FastifyInstance } from 'fastify';
import { Histogram } from 'prom-client';
import { RepeatedLog } from '../http/repeated-log.js';

/** The `route` label of requests no route matched: raw URLs would give every scanner its own series. */
const UNMATCHED_ROUTE = 'unmatched';

/**
 * Times every response of the gateway into `http_request_duration_seconds` by method, route pattern
 * (`/v1/accounts/:accountId/shipments/:shipmentId`, never the URL) and status, and writes one line
 * per request with its request id: at debug level, so that `info` stays quiet under load, and as a
 * warning for a 5xx, at most one per route and status per `REPEATED_LOG_INTERVAL_MS` (with the number left out).
 */
export function registerHttpMetrics(instance: FastifyInstance, metrics: ServiceMetrics, logger: Logger): void {
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests answered by the gateway, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [metrics.registry],
  });
  const failures = new RepeatedLog();
  instance.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const statusCode = reply.statusCode;
    duration.observe({ method: request.method, route, status_code: String(statusCode) }, reply.elapsedTime / 1000);
    const line = { requestId: request.id, method: request.method, route, statusCode, durationMs: Math.round(reply.elapsedTime) };
    if (statusCode >= 500) failures.report(`${route} ${statusCode}`, (suppressed) => logger.warn({ ...line, suppressed }, 'request completed'));
    else logger.debug(line, 'request completed');
    done();
  });
}
