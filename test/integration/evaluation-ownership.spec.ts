import { jetstreamManager } from '@nats-io/jetstream';
import { jetStreamName } from '@tracking/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assignDevice, createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { eventually } from '../support/eventually.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectTestNats } from '../support/jetstream.js';
import { OwnNatsServer } from '../support/nats-server.js';
import { samplesOf, scrape } from '../support/ops-endpoints.js';
import { killServices, type ServiceProcess, spawnService } from '../support/processes.js';
import { TestStack } from '../support/stack.js';

const LATENESS_SECONDS = 30;
const SHIPMENTS = 16;
const RADIUS = 100;
const centre = { lat: 52.3, lng: 5.1 };
const inside = { ...centre, accuracyMeters: 5 };
const far = { lat: centre.lat + 5000 / 111_195, lng: centre.lng, accuracyMeters: 5 };

/**
 * The readings of one tracker, second by second from `t0` (docs/geofence-evaluation.md, "Ownership"):
 * - `before`: 0..9 s, far from the place, in range;
 * - `buffered`: 10..69 s, one upload (a tracker that buffered a minute): inside the place from 20 to 39 s,
 *   the temperature above 8 °C all along (9..16 °C, peak 16);
 * - `after`: 70..79 s far and in range, then one reading past the lateness bound that makes everything final.
 * Uninterrupted, that is one visit (20 s to 40 s), one TemperatureHigh alert (10 s to 70 s, peak 16) and a
 * temperature excursion of 60 s.
 */
function readingsOf(t0: number) {
  const reading = (i: number) => ({
    recordedAt: t0 + i * 1000,
    location: i >= 20 && i < 40 ? inside : far,
    temperatureC: i >= 10 && i < 70 ? 9 + (i % 8) : 5,
  });
  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => reading(from + k));
  return {
    before: range(0, 10),
    buffered: range(10, 70),
    after: [...range(70, 80), { recordedAt: t0 + (80 + LATENESS_SECONDS + 5) * 1000, location: far, temperatureC: 5 }],
  };
}

/**
 * Fault injection on the evaluation with two worker processes (real processes from the build): one is
 * killed with SIGKILL right after a buffered upload reached it and before its evaluation committed. Its
 * unacknowledged messages must still count, before the readings that came after them: the visits, alerts,
 * peaks and excursion totals equal those of an uninterrupted run, and each shipment's state is restored at
 * most once by the survivor.
 */
describe('evaluation ownership: a worker killed mid-stream', { timeout: 240000 }, () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let base: string;
  let oms: pg.Client;
  const workers: ServiceProcess[] = [];

  beforeAll(async () => {
    stack = await TestStack.start({
      env: {
        EVALUATION_LATENESS_SECONDS: String(LATENESS_SECONDS),
        // Long enough that the kill lands while the buffered upload waits in the reorder buffer.
        EVALUATION_DELAY_MS: '8000',
        EVALUATION_SWEEP_INTERVAL_MS: '200',
        LEASE_TTL_MS: '3000',
        LEASE_HEARTBEAT_MS: '500',
      },
    });
    tenant = await createTenant(stack);
    base = `/v1/accounts/${tenant.accountIds[0]}`;
    oms = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
    await oms.connect();
  });
  afterAll(async () => {
    await killServices();
    await oms?.end();
    await stack?.stop();
  });

  async function send(deviceId: string, readings: { recordedAt: number }[]): Promise<void> {
    const body = { readings: readings.map(({ recordedAt, ...values }) => ({ deviceId, recordedAt: new Date(recordedAt).toISOString(), ...values })) };
    const response = await stack.request('POST', `${base}/readings`, { token: tenant.token, body });
    expect(response.status, response.text).toBe(200);
    expect(response.body.rejected).toEqual([]);
  }

  /** Evaluations with readings this worker committed (`evaluation_lag_seconds` counts one per shipment evaluated). */
  async function evaluatedBy(worker: ServiceProcess): Promise<number> {
    return samplesOf(await scrape(worker.opsUrl), 'evaluation_lag_seconds_count').reduce((sum, sample) => sum + sample.value, 0);
  }
  async function counter(worker: ServiceProcess, name: string): Promise<number> {
    return samplesOf(await scrape(worker.opsUrl), name).reduce((sum, sample) => sum + sample.value, 0);
  }

  /** The evaluation's consumers of the readings stream: messages not yet delivered, and delivered but not acknowledged. */
  async function evaluationBacklog(): Promise<{ pending: number; unacknowledged: number }> {
    const nats = await connectTestNats();
    try {
      const jsm = await jetstreamManager(nats);
      let pending = 0;
      let unacknowledged = 0;
      for await (const info of jsm.consumers.list(jetStreamName(stack.env.NATS_SUBJECT_PREFIX!, 'READINGS'))) {
        if (!info.name.includes('shipment-evaluation')) continue;
        pending += info.num_pending;
        unacknowledged += info.num_ack_pending;
      }
      return { pending, unacknowledged };
    } finally {
      await nats.close();
    }
  }

  it('changes no visit, alert, peak or excursion total compared with an uninterrupted run, and restores each state at most once', async () => {
    workers.push(await spawnService(stack, 'worker'), await spawnService(stack, 'worker'));
    const [first, second] = workers as [ServiceProcess, ServiceProcess];
    await createPointOfInterest(stack, tenant, { body: { location: centre, radiusMeters: RADIUS, dwellSeconds: 2 } });
    const tracked: { shipmentId: string; deviceId: string; t0: number }[] = [];
    for (let i = 0; i < SHIPMENTS; i++) {
      const shipment = await createShipment(stack, tenant, { body: { conditions: { temperature: { maxC: 8 } } } });
      const { set } = await createSet(stack, tenant, shipment.id);
      const { device } = await createDevice(stack, tenant);
      const t0 = (await assignDevice(stack, tenant, set, device.id)) + 1000;
      tracked.push({ shipmentId: shipment.id, deviceId: device.id, t0 });
    }

    // Both workers evaluate some of the shipments.
    await Promise.all(tracked.map(({ deviceId, t0 }) => send(deviceId, readingsOf(t0).before)));
    await eventually(
      async () => [await evaluatedBy(first), await evaluatedBy(second)],
      ([a, b]) => a! + b! >= SHIPMENTS && a! > 0 && b! > 0,
      'both workers evaluating',
      60000,
    );

    // The buffered uploads; the first worker is killed once every message reached a worker and some wait unacknowledged.
    await Promise.all(tracked.map(({ deviceId, t0 }) => send(deviceId, readingsOf(t0).buffered)));
    await eventually(evaluationBacklog, ({ pending, unacknowledged }) => pending === 0 && unacknowledged > 0, 'the buffered uploads delivered', 30000);
    await first.kill9();

    // The trackers go on reporting at once.
    await Promise.all(tracked.map(({ deviceId, t0 }) => send(deviceId, readingsOf(t0).after)));

    const iso = (ms: number) => new Date(ms).toISOString();
    const outcome = async () => {
      const found: unknown[] = [];
      for (const { shipmentId } of tracked) {
        const visits = (await stack.request('GET', `${base}/shipments/${shipmentId}/visits`, { token: tenant.token })).body.items;
        const alerts = (await stack.request('GET', `${base}/alerts?shipmentId=${shipmentId}`, { token: tenant.token })).body.items;
        const shipment = (await stack.request('GET', `${base}/shipments/${shipmentId}`, { token: tenant.token })).body;
        found.push({
          visits: visits.map(({ arrivedAt, departedAt }: Record<string, unknown>) => ({ arrivedAt, departedAt })),
          alerts: alerts.map(({ kind, status, startedAt, endedAt, peakValue, threshold }: Record<string, unknown>) => ({ kind, status, startedAt, endedAt, peakValue, threshold })),
          excursions: shipment.excursions,
        });
      }
      return found;
    };
    const uninterrupted = tracked.map(({ t0 }) => ({
      visits: [{ arrivedAt: iso(t0 + 20000), departedAt: iso(t0 + 40000) }],
      alerts: [{ kind: 'TemperatureHigh', status: 'Closed', startedAt: iso(t0 + 10000), endedAt: iso(t0 + 70000), peakValue: 16, threshold: 8 }],
      excursions: { temperatureSeconds: 60, humiditySeconds: 0 },
    }));
    // Past the lease's ttl and the JetStream ack wait (30 s), with room for a loaded machine.
    const same = (value: unknown[]) => JSON.stringify(value) === JSON.stringify(uninterrupted);
    const last = await eventually(outcome, same, 'the uninterrupted outcome', 90000).catch(() => outcome());
    // The shipments whose outcome differs from the uninterrupted run's, with both.
    const differing = last.flatMap((found, i) => (JSON.stringify(found) === JSON.stringify(uninterrupted[i]) ? [] : [{ shipment: i, found, uninterrupted: uninterrupted[i] }]));
    expect(differing).toEqual([]);
    // Each state restored at most once by the survivor (a restore takes in every stored reading from the
    // horizon on, so the redelivered ones come as repeats then: `evaluation_late_readings_total` counts them).
    expect(await counter(second, 'evaluation_restores_total')).toBeLessThanOrEqual(SHIPMENTS);
  });
});

/**
 * NATS restarted (a nats-server of the test's own, with JetStream on a directory that outlives it): the
 * partitions' consumers subscribe again by themselves and the evaluation goes on; the leases, in
 * PostgreSQL, are not touched (same holder, same epochs).
 */
describe('evaluation ownership: NATS restarted', { timeout: 120000 }, () => {
  let nats: OwnNatsServer;
  let store: string;
  let stack: TestStack;
  let tenant: TestTenant;
  let oms: pg.Client;

  beforeAll(async () => {
    store = mkdtempSync(join(tmpdir(), 'tracking-nats-'));
    nats = await OwnNatsServer.start({ args: ['-js', '-sd', store] });
    stack = await TestStack.start({
      workers: 1,
      env: { NATS_URL: nats.url, NATS_RECONNECT_TIME_WAIT_MS: '200', EVALUATION_LATENESS_SECONDS: String(LATENESS_SECONDS), EVALUATION_DELAY_MS: '20' },
    });
    tenant = await createTenant(stack);
    oms = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
    await oms.connect();
  });
  afterAll(async () => {
    await oms?.end();
    await nats?.start();
    await stack?.stop();
    await nats?.stop();
    rmSync(store, { recursive: true, force: true });
  });

  it('evaluates again after the restart, the leases untouched', async () => {
    const base = `/v1/accounts/${tenant.accountIds[0]}`;
    await createPointOfInterest(stack, tenant, { body: { location: centre, radiusMeters: RADIUS, dwellSeconds: 2 } });
    const shipment = await createShipment(stack, tenant, { body: { conditions: { temperature: { maxC: 8 } } } });
    const { set } = await createSet(stack, tenant, shipment.id);
    const { device } = await createDevice(stack, tenant);
    const t0 = (await assignDevice(stack, tenant, set, device.id)) + 1000;
    const send = async (readings: { recordedAt: number }[]) => {
      const body = { readings: readings.map(({ recordedAt, ...values }) => ({ deviceId: device.id, recordedAt: new Date(recordedAt).toISOString(), ...values })) };
      return stack.request('POST', `${base}/readings`, { token: tenant.token, body });
    };
    const { before, buffered, after } = readingsOf(t0);
    expect((await send(before)).status).toBe(200);
    const watermark = async () => Number((await oms.query("SELECT state->>'watermark' AS w FROM shipment_evaluations WHERE shipment_id = $1", [shipment.id])).rows[0]?.w ?? 0);
    await eventually(watermark, (w) => w >= t0 + 9000, 'the first readings evaluated');
    const leases = async () => (await oms.query("SELECT name, owner, epoch FROM leases WHERE lease_group = 'evaluation' ORDER BY name")).rows;
    const held = await leases();
    expect(held).toHaveLength(32);

    await nats.stop();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await nats.start();
    // Ingest waits for the gateway's NATS connection to come back.
    await eventually(async () => (await send(buffered)).status, (status) => status === 200, 'ingest after the restart', 30000);
    expect((await send(after)).status).toBe(200);
    const iso = (ms: number) => new Date(ms).toISOString();
    await eventually(
      // Until the OMS's NATS connection is back, the read answers 503: no visits yet.
      async () => ((await stack.request('GET', `${base}/shipments/${shipment.id}/visits`, { token: tenant.token })).body.items ?? []) as Record<string, unknown>[],
      (items: Record<string, unknown>[]) => items.length === 1 && items[0]!.departedAt === iso(t0 + 40000),
      'the visit the readings after the restart decide',
      30000,
    );
    // The excursion ends with the first reading of `after` (70 s), which the evaluation may take after the
    // visit's departure (decided by `buffered`): until then it reads 59 s.
    const excursions = await eventually(
      async () => (await stack.request('GET', `${base}/shipments/${shipment.id}`, { token: tenant.token })).body.excursions,
      (found) => JSON.stringify(found) === JSON.stringify({ temperatureSeconds: 60, humiditySeconds: 0 }),
      'the excursion the readings after the restart end',
      30000,
    ).catch(async () => (await stack.request('GET', `${base}/shipments/${shipment.id}`, { token: tenant.token })).body.excursions);
    expect(excursions).toEqual({ temperatureSeconds: 60, humiditySeconds: 0 });
    expect(await leases()).toEqual(held);
  });
});
