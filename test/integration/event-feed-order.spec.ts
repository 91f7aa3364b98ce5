import { randomUUID } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { type EventEnvelope, EventSubjects, EventType } from '@tracking/contracts';
import { ensureStream, eventsStreamSettings } from '@tracking/outbox';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOmsConfig } from '../../apps/oms/src/config.js';
import { eventually } from '../support/eventually.js';
import { connectTestNats } from '../support/jetstream.js';
import { TestStack } from '../support/stack.js';

/**
 * The feed keeps each shipment's events in the order the OMS recorded them (the stream's order) while its
 * database connections are terminated over and over (`pg_terminate_backend`): its leader's lock
 * connection (the lead moves between the two OMS replicas) and the connections its batches are stored on
 * (batches fail). The events are published on the stack's events stream as the relay would.
 */
const SHIPMENTS = 1200;
const GROUP = 20;
const TICK_MS = 40;
const STEPS = [EventType.ShipmentCreated, EventType.ShipmentStarted, EventType.ShipmentDelivered, EventType.ShipmentCompleted];

let stack: TestStack;
let nats: NatsConnection;
let db: pg.Client;

beforeAll(async () => {
  stack = await TestStack.start({ omsReplicas: 2 });
  nats = await connectTestNats();
  db = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL, application_name: 'test-terminator' });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await nats?.close();
  await stack?.stop();
});

describe('the events feed under terminated database connections', { timeout: 120000 }, () => {
  it('keeps every shipment’s events in stream order through failed batches and leader changes', async () => {
    const config = readOmsConfig(stack.envOf('oms'));
    await ensureStream(nats, eventsStreamSettings(config));
    const js = jetstream(nats);
    const tenantId = randomUUID();
    const accounts = [randomUUID(), randomUUID(), randomUUID()];
    const shipments = Array.from({ length: SHIPMENTS }, (_, i) => ({ id: randomUUID(), accountId: accounts[i % accounts.length]! }));
    const database = new URL(stack.env.OMS_DATABASE_URL!).pathname.slice(1);

    let terminating = true;
    let terminated = 0;
    const terminator = (async () => {
      while (terminating) {
        const { rows } = await db.query<{ n: number }>(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
          [database],
        );
        terminated += rows[0]?.n ?? 0;
        await new Promise((resolve) => setTimeout(resolve, 80));
      }
    })();

    // A wave: at each tick the next group of shipments gets its first event and each earlier group its
    // next one, so a shipment's events follow each other a tick apart, among other shipments' events.
    const published: string[] = [];
    const publish = async (shipment: (typeof shipments)[number], step: number) => {
      const id = randomUUID();
      const type = STEPS[step]!;
      const envelope: EventEnvelope = {
        tenantId,
        event: { id, type, occurredAt: new Date().toISOString(), accountId: shipment.accountId, data: { shipmentId: shipment.id, step } },
      };
      await js.publish(EventSubjects.of(stack.env.NATS_SUBJECT_PREFIX!, tenantId, shipment.accountId, type), JSON.stringify(envelope), { msgID: id });
      published.push(id);
    };
    const groups = SHIPMENTS / GROUP;
    for (let tick = 0; tick < groups + STEPS.length - 1; tick++) {
      for (let step = STEPS.length - 1; step >= 0; step--) {
        const group = tick - step;
        if (group < 0 || group >= groups) continue;
        await Promise.all(shipments.slice(group * GROUP, (group + 1) * GROUP).map((shipment) => publish(shipment, step)));
      }
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    }
    terminating = false;
    await terminator;
    expect(terminated).toBeGreaterThan(10);

    const count = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [tenantId])).rows[0]!.n;
    await eventually(count, (n) => n === published.length, 'every event reaches the feed', 60000);

    const { rows } = await db.query<{ shipment: string; step: number }>(
      `SELECT body::jsonb -> 'data' ->> 'shipmentId' AS shipment, (body::jsonb -> 'data' ->> 'step')::int AS step
         FROM events WHERE tenant_id = $1 ORDER BY seq`,
      [tenantId],
    );
    const steps = new Map<string, number[]>();
    for (const row of rows) steps.set(row.shipment, [...(steps.get(row.shipment) ?? []), row.step]);
    const outOfOrder = [...steps].filter(([, seen]) => seen.some((step, index) => step !== index));
    expect(outOfOrder).toEqual([]);
    expect(steps.size).toBe(SHIPMENTS);
  });
});
