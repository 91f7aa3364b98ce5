import { createLogger } from '@tracking/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type OpsServer, startOpsServer } from './ops-server.js';
import { Readiness } from './readiness.js';
import { ServiceMetrics } from './service-metrics.js';

describe('the ops server', () => {
  let server: OpsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function start(readiness = new Readiness()): Promise<string> {
    const metrics = new ServiceMetrics('unit');
    metrics.observeRpcServer('oms.shipments.get', 'ok', 0.02);
    server = await startOpsServer({ host: '127.0.0.1', port: 0, metrics, readiness, logger: createLogger('unit', 'silent') });
    return `http://127.0.0.1:${server.port}`;
  }

  it('answers liveness, readiness and metrics, and 404 elsewhere', async () => {
    const readiness = new Readiness();
    const base = await start(readiness);
    expect((await fetch(`${base}/health/live`)).status).toBe(200);
    expect((await fetch(`${base}/health/ready`)).status).toBe(503);
    readiness.serve({ required: { database: () => true } });
    const ready = await fetch(`${base}/health/ready?verbose=1`);
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'ok', checks: { database: 'ok' } }]);
    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await metrics.text()).toContain('nats_rpc_server_duration_seconds_count{service="unit",subject="oms.shipments.get",outcome="ok"} 1');
    expect((await fetch(`${base}/`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('answers 503 on liveness once a liveness check fails', async () => {
    const readiness = new Readiness();
    let open = true;
    readiness.serve({ required: {}, live: { nats: () => open } });
    const base = await start(readiness);
    expect((await fetch(`${base}/health/live`)).status).toBe(200);
    open = false;
    const dead = await fetch(`${base}/health/live`);
    expect([dead.status, await dead.json()]).toEqual([503, { status: 'failing', checks: { nats: 'failing' } }]);
  });
});
