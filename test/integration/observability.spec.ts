import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { operationPath, waitForOperation } from '../factories/bulk.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { getOps, type MetricSample, samplesOf, scrape, TcpProxy, valueOf, waitUntil } from '../support/ops-endpoints.js';
import { killServices, type ServiceProcess, spawnService } from '../support/processes.js';
import { TestStack } from '../support/stack.js';

/**
 * The ops endpoints of every process (gateway, OMS, DMS, worker) and the request id in their logs,
 * against the processes as they run in production: built entry points, each on its own ops port.
 * Requests go through the spawned gateway; the stack's in-process gateway only mints the token.
 */

let stack: TestStack;
let tenant: TestTenant;
const processes = {} as Record<'gateway' | 'oms' | 'dms' | 'worker', ServiceProcess>;

/** Requests through the spawned gateway process. */
function viaGateway(method: string, path: string, options: { body?: unknown; requestId?: string } = {}) {
  const headers: Record<string, string> = options.requestId ? { 'x-request-id': options.requestId } : {};
  return stack.request(method, path, { token: tenant.token, body: options.body, headers, baseUrl: processes.gateway.baseUrl });
}

/** The JSON log lines of a process that carry `requestId`. */
function linesOf(service: ServiceProcess, requestId: string): Record<string, unknown>[] {
  return service
    .lines()
    .filter((line) => line.startsWith('{') && line.includes(requestId))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.requestId === requestId);
}

beforeAll(async () => {
  stack = await TestStack.start({ omsReplicas: 0, dmsReplicas: 0 });
  // Debug level: the per-message lines of the services, where the request id shows.
  const [oms, dms, worker, gateway] = await Promise.all([
    spawnService(stack, 'oms', { LOG_LEVEL: 'debug' }),
    spawnService(stack, 'dms', { LOG_LEVEL: 'debug' }),
    spawnService(stack, 'worker', { LOG_LEVEL: 'debug' }),
    spawnService(stack, 'gateway'),
  ]);
  Object.assign(processes, { oms, dms, worker, gateway });
  tenant = await createTenant(stack);
}, 120000);

afterAll(async () => {
  await killServices();
  await stack?.stop();
});

describe('health endpoints on the ops port', () => {
  it.each([
    ['gateway', { database: 'ok', nats: 'ok', redis: 'ok' }],
    ['oms', { database: 'ok', nats: 'ok', redis: 'ok' }],
    ['dms', { database: 'ok', nats: 'ok' }],
    ['worker', { database: 'ok', nats: 'ok', redis: 'ok' }],
  ] as const)('%s is live, and ready with its own dependencies', async (name, checks) => {
    const live = await getOps(processes[name].opsUrl, '/health/live');
    expect(live).toMatchObject({ status: 200, body: { status: 'ok' } });
    const ready = await getOps(processes[name].opsUrl, '/health/ready');
    expect(ready).toMatchObject({ status: 200, body: { status: 'ok', checks } });
  });

  it('answers 503 on /health/ready while the process cannot reach its database, and 200 again once it can', async () => {
    // A DMS of its own, behind a proxy the test can cut, on a subject prefix nobody sends to: the
    // other processes keep their database and their traffic.
    const proxy = await TcpProxy.for(stack.env.DMS_DATABASE_URL!);
    try {
      const dms = await spawnService(stack, 'dms', {
        DMS_DATABASE_URL: proxy.urlFor(stack.env.DMS_DATABASE_URL!),
        NATS_SUBJECT_PREFIX: `${stack.env.NATS_SUBJECT_PREFIX}isolated.`,
      });
      expect((await getOps(dms.opsUrl, '/health/ready')).status).toBe(200);

      await proxy.cut();
      const unready = await getOps(dms.opsUrl, '/health/ready');
      expect(unready).toMatchObject({ status: 503, body: { status: 'failing', checks: { database: 'failing', nats: 'ok' } } });
      // Liveness is about the process, not its dependencies: restarting it would not bring the database back.
      expect((await getOps(dms.opsUrl, '/health/live')).status).toBe(200);

      await proxy.restore();
      await waitUntil(async () => (await getOps(dms.opsUrl, '/health/ready')).status === 200, 'the DMS is ready again');
      expect(await dms.terminate()).toBe(0);
    } finally {
      await proxy.cut();
    }
  });
});

describe('metrics', () => {
  let samples: Record<'gateway' | 'oms' | 'dms' | 'worker', MetricSample[]>;
  let shipmentId: string;

  beforeAll(async () => {
    const shipment = (await viaGateway('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { body: { name: 'Metrics' } })).body;
    shipmentId = shipment.id;
    expect((await viaGateway('GET', `/v1/accounts/${tenant.accountIds[0]}/shipments/${shipmentId}`)).status).toBe(200);
    expect((await viaGateway('GET', `/v1/accounts/${tenant.accountIds[0]}/shipments/${randomUUID()}`)).status).toBe(404);
    const { set } = await createSet(stack, tenant, shipmentId);
    const { device } = await createDevice(stack, tenant);
    const assign = `/v1/accounts/${tenant.accountIds[0]}/shipments/${shipmentId}/sets/${set.id}/devices/${device.id}`;
    expect((await viaGateway('PUT', assign)).status).toBe(204);
    const { device: retired } = await createDevice(stack, tenant);
    const bulk = await viaGateway('POST', `/v1/accounts/${tenant.accountIds[0]}/devices/bulk-retire`, { body: { deviceIds: [retired.id] } });
    expect(bulk.status).toBe(202);
    await waitForOperation(stack, tenant, operationPath(bulk));
    // The worker counts the job once BullMQ has it as completed, just after the operation's last write.
    await waitUntil(
      async () => valueOf(await scrape(processes.worker.opsUrl), 'operations_jobs_total', { outcome: 'completed' }) >= 1,
      'the worker counted the completed job',
    );
    samples = {
      gateway: await scrape(processes.gateway.opsUrl),
      oms: await scrape(processes.oms.opsUrl),
      dms: await scrape(processes.dms.opsUrl),
      worker: await scrape(processes.worker.opsUrl),
    };
  });

  it('labels every series with the service and includes the process metrics', () => {
    for (const [service, of] of Object.entries(samples)) {
      expect(of.length).toBeGreaterThan(0);
      expect(of.filter((sample) => sample.labels.service !== service)).toEqual([]);
      expect(samplesOf(of, 'process_cpu_user_seconds_total')).toHaveLength(1);
      expect(samplesOf(of, 'nodejs_eventloop_lag_p99_seconds')).toHaveLength(1);
    }
  });

  it('times the gateway’s HTTP requests by route pattern, method and status', () => {
    const byRoute = (route: string, method: string, status: string) =>
      valueOf(samples.gateway, 'http_request_duration_seconds_count', { route, method, status_code: status });
    expect(byRoute('/v1/accounts/:accountId/shipments/:shipmentId', 'GET', '200')).toBe(1);
    expect(byRoute('/v1/accounts/:accountId/shipments/:shipmentId', 'GET', '404')).toBe(1);
    expect(byRoute('/v1/accounts/:accountId/shipments', 'POST', '201')).toBe(1);
    // No series names a raw URL.
    expect(samplesOf(samples.gateway, 'http_request_duration_seconds_count').filter((sample) => sample.labels.route!.includes(shipmentId))).toEqual([]);
    expect(samplesOf(samples.gateway, 'http_request_duration_seconds_bucket', { le: '+Inf' }).length).toBeGreaterThan(0);
  });

  it('times NATS requests on the client side, by subject and outcome', () => {
    expect(valueOf(samples.gateway, 'nats_rpc_client_duration_seconds_count', { subject: 'oms.shipments.get', outcome: 'ok' })).toBe(1);
    expect(
      valueOf(samples.gateway, 'nats_rpc_client_duration_seconds_count', { subject: 'oms.shipments.get', outcome: 'ShipmentNotExists' }),
    ).toBe(1);
    // The OMS's own calls to the DMS, from the service and from the worker.
    expect(valueOf(samples.oms, 'nats_rpc_client_duration_seconds_count', { subject: 'dms.devices.assign', outcome: 'ok' })).toBe(1);
    expect(valueOf(samples.worker, 'nats_rpc_client_duration_seconds_count', { subject: 'dms.operations.retire', outcome: 'ok' })).toBe(1);
  });

  it('times NATS messages on the server side, by subject and outcome', () => {
    expect(valueOf(samples.oms, 'nats_rpc_server_duration_seconds_count', { subject: 'oms.shipments.get', outcome: 'ok' })).toBe(1);
    expect(
      valueOf(samples.oms, 'nats_rpc_server_duration_seconds_count', { subject: 'oms.shipments.get', outcome: 'ShipmentNotExists' }),
    ).toBe(1);
    expect(valueOf(samples.dms, 'nats_rpc_server_duration_seconds_count', { subject: 'dms.devices.assign', outcome: 'ok' })).toBe(1);
    expect(valueOf(samples.dms, 'nats_rpc_server_duration_seconds_count', { subject: 'dms.operations.retire', outcome: 'ok' })).toBe(1);
    // Nothing is being handled between requests.
    expect(samplesOf(samples.oms, 'nats_rpc_server_in_flight').every((sample) => sample.value === 0)).toBe(true);
  });

  it('reports the database pool of every process', () => {
    for (const of of Object.values(samples)) {
      const total = valueOf(of, 'database_pool_connections', { state: 'total' });
      expect(total).toBeGreaterThan(0);
      expect(valueOf(of, 'database_pool_connections', { state: 'idle' })).toBeLessThanOrEqual(total);
      expect(samplesOf(of, 'database_pool_connections', { state: 'waiting' })).toHaveLength(1);
    }
  });

  it('counts the statements of the batched hot reads by the calls each answered', () => {
    // The two reads of one shipment, one after the other: each its own statement of one call.
    expect(valueOf(samples.oms, 'database_batched_calls_count')).toBe(2);
    expect(valueOf(samples.oms, 'database_batched_calls_sum')).toBe(2);
    expect(valueOf(samples.oms, 'database_batched_calls_bucket', { le: '1' })).toBe(2);
    expect(samplesOf(samples.dms, 'database_batched_calls_count')).toEqual([expect.objectContaining({ value: 0 })]);
  });

  it('reports the queue depth and the job outcomes on the worker', () => {
    for (const state of ['waiting', 'active', 'delayed', 'failed']) {
      expect(samplesOf(samples.worker, 'operations_queue_jobs', { state })).toHaveLength(1);
    }
    expect(valueOf(samples.worker, 'operations_jobs_total', { outcome: 'completed' })).toBe(1);
    expect(valueOf(samples.worker, 'operations_jobs_total', { outcome: 'failed' })).toBe(0);
  });

  it('serves the gateway’s rate limit and Redis counters', async () => {
    const text = (await getOps(processes.gateway.opsUrl, '/metrics')).text;
    for (const name of ['gateway_rate_limited_requests_total', 'gateway_redis_failures_total', 'gateway_idempotent_replays_total']) {
      expect(text).toContain(`# TYPE ${name} counter`);
    }
  });
});

describe('the request id in the logs', () => {
  it('appears in the OMS’s lines for the request and in the DMS’s lines for the OMS’s call made while handling it', async () => {
    const shipment = await createShipment(stack, tenant);
    const { set } = await createSet(stack, tenant, shipment.id);
    const { device } = await createDevice(stack, tenant);
    const requestId = `obs-assign-${randomUUID()}`;
    const path = `/v1/accounts/${tenant.accountIds[0]}/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`;
    const answer = await viaGateway('PUT', path, { requestId });
    expect(answer.status).toBe(204);
    expect(answer.headers.get('x-request-id')).toBe(requestId);

    await processes.oms.waitForOutput(requestId);
    await processes.dms.waitForOutput(requestId);
    expect(linesOf(processes.oms, requestId)).toContainEqual(
      expect.objectContaining({ service: 'oms', subject: 'oms.assignments.assign', outcome: 'ok', msg: 'message handled' }),
    );
    expect(linesOf(processes.dms, requestId)).toContainEqual(
      expect.objectContaining({ service: 'dms', subject: 'dms.devices.assign', outcome: 'ok', msg: 'message handled' }),
    );
  });

  it('appears in the worker’s lines for the job of an operation, and in the DMS’s lines for the worker’s calls', async () => {
    const { device } = await createDevice(stack, tenant);
    const requestId = `obs-bulk-${randomUUID()}`;
    const started = await viaGateway('POST', `/v1/accounts/${tenant.accountIds[0]}/devices/bulk-retire`, {
      body: { deviceIds: [device.id] },
      requestId,
    });
    expect(started.status).toBe(202);
    await waitForOperation(stack, tenant, operationPath(started));

    await processes.worker.waitForOutput(requestId);
    await processes.dms.waitForOutput(requestId);
    const workerLines = linesOf(processes.worker, requestId);
    expect(workerLines).toContainEqual(expect.objectContaining({ service: 'worker', msg: 'operation started' }));
    expect(workerLines).toContainEqual(expect.objectContaining({ service: 'worker', msg: 'operation finished' }));
    expect(linesOf(processes.dms, requestId)).toContainEqual(
      expect.objectContaining({ service: 'dms', subject: 'dms.operations.retire', outcome: 'ok' }),
    );
  });
});
