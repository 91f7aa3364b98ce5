import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { EventType } from '@tracking/contracts';
import { type EventRecord, recordEvents } from '@tracking/outbox';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { expectInvalidParameter } from '../support/http-assertions.js';
import { killServices, spawnService } from '../support/processes.js';
import { streamMessages } from '../support/jetstream.js';
import { connectOms } from '../support/oms-database.js';
import { type HttpResult, TestStack } from '../support/stack.js';
import { eventually } from '../support/eventually.js';

/*
 * The events backbone: the outbox a change writes its events into, the relay that publishes them on
 * JetStream, and the OMS's feed (`GET /events`) filled from the stream. Events are written here straight
 * into the outbox, as a service's transaction does (`recordEvents`); which routes write which events is
 * event-emission.spec.ts's subject.
 */

/** Polls `read` until `done` holds for its value, or fails after the deadline with the last value. */
/** Writes events into a service database's outbox in one transaction; `rollback` makes it roll back instead. */
async function writeEvents(client: pg.Client, records: EventRecord[], rollback = false): Promise<string[]> {
  await client.query('BEGIN');
  try {
    const events = await recordEvents(client, records);
    await client.query(rollback ? 'ROLLBACK' : 'COMMIT');
    return events.map((event) => event.id);
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

function shipmentEvent(tenant: TestTenant, name: string, type = EventType.ShipmentCreated, account = 0): EventRecord {
  return { tenantId: tenant.tenantId, accountId: tenant.accountIds[account]!, type, data: { name } };
}

async function feedIds(stack: TestStack, tenant: TestTenant, query = '', account = 0): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const separator = query === '' ? '?' : `?${query}&`;
    const path = `/v1/accounts/${tenant.accountIds[account]}/events${separator}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const page: HttpResult<{ items: { id: string }[]; metadata: { nextCursor: string | null } }> = await stack.request('GET', path, { token: tenant.token });
    expect(page.status, page.text).toBe(200);
    ids.push(...page.body.items.map((event) => event.id));
    cursor = page.body.metadata.nextCursor;
  } while (cursor);
  return ids;
}

describe('events: outbox, relay and feed', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let oms: pg.Client;
  let dms: pg.Client;

  beforeAll(async () => {
    stack = await TestStack.start({ workers: 1, env: { EVENTS_RETENTION_INTERVAL_MS: '200' } });
    tenant = await createTenant(stack, { accounts: 2 });
    oms = await connectOms(stack);
    dms = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await dms.connect();
  });

  afterAll(async () => {
    await oms?.end();
    await dms?.end();
    await stack?.stop();
  });

  it('relays committed events of both services into the feed, once each, with their ids, types and data', async () => {
    const fromOms = await writeEvents(oms, [shipmentEvent(tenant, 'a'), shipmentEvent(tenant, 'b', EventType.ShipmentUpdated)]);
    const fromDms = await writeEvents(dms, [{ tenantId: tenant.tenantId, accountId: tenant.accountIds[0]!, type: EventType.DeviceCreated, data: { serialNumber: 'S-1' } }]);
    const ids = await eventually(() => feedIds(stack, tenant), (found) => [...fromOms, ...fromDms].every((id) => found.includes(id)), 'the feed');
    expect(new Set(ids).size).toBe(ids.length);
    // One transaction's events keep their order.
    expect(ids.indexOf(fromOms[0]!)).toBeLessThan(ids.indexOf(fromOms[1]!));
    const page = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/events?type=device.created`, { token: tenant.token });
    const device = page.body.items.find((event: { id: string }) => event.id === fromDms[0]);
    expect(device).toEqual({ id: fromDms[0], type: 'device.created', occurredAt: expect.any(String), accountId: tenant.accountIds[0], data: { serialNumber: 'S-1' } });
    // The outbox is empty once relayed.
    await eventually(async () => (await oms.query('SELECT count(*)::int AS n FROM outbox')).rows[0].n as number, (n) => n === 0, 'the OMS outbox to drain');
  });

  it('relays nothing of a transaction that rolled back', async () => {
    const [rolledBack] = await writeEvents(oms, [shipmentEvent(tenant, 'never')], true);
    const [marker] = await writeEvents(oms, [shipmentEvent(tenant, 'after')]);
    const ids = await eventually(() => feedIds(stack, tenant), (found) => found.includes(marker!), 'the marker event');
    expect(ids).not.toContain(rolledBack);
  });

  it("shows an account only its own events, and filters by type (one or a list)", async () => {
    const [mine] = await writeEvents(oms, [shipmentEvent(tenant, 'mine', EventType.ShipmentStarted)]);
    const [theirs] = await writeEvents(oms, [shipmentEvent(tenant, 'theirs', EventType.ShipmentStarted, 1)]);
    await eventually(() => feedIds(stack, tenant, '', 1), (found) => found.includes(theirs!), 'the other account');
    const started = await feedIds(stack, tenant, 'type=shipment.started');
    expect(started).toContain(mine);
    expect(started).not.toContain(theirs);
    const both = await feedIds(stack, tenant, 'type=shipment.started,device.created');
    const all = await feedIds(stack, tenant);
    expect(both.length).toBeLessThan(all.length);
    expect(both).toContain(mine);
    const other = await createTenant(stack);
    const foreign = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/events`, { token: other.token });
    expectInvalidParameter(foreign, 'accountId', 'AccountNotFound');
  });

  it('starts right after `after`, and refuses an unknown, foreign or malformed `after`, or `after` with a cursor', async () => {
    const ids = await writeEvents(oms, [1, 2, 3].map((n) => shipmentEvent(tenant, `after-${n}`)));
    const all = await eventually(() => feedIds(stack, tenant), (found) => found.includes(ids[2]!), 'the three events');
    const after = await feedIds(stack, tenant, `after=${ids[0]}`);
    expect(after).toEqual(all.slice(all.indexOf(ids[0]!) + 1));
    const path = `/v1/accounts/${tenant.accountIds[0]}/events`;
    expectInvalidParameter(await stack.request('GET', `${path}?after=0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a`, { token: tenant.token }), 'after', 'EventNotFound');
    const [foreign] = await writeEvents(oms, [shipmentEvent(tenant, 'foreign', EventType.ShipmentCreated, 1)]);
    await eventually(() => feedIds(stack, tenant, '', 1), (found) => found.includes(foreign!), 'the foreign event');
    expectInvalidParameter(await stack.request('GET', `${path}?after=${foreign}`, { token: tenant.token }), 'after', 'EventNotFound');
    expectInvalidParameter(await stack.request('GET', `${path}?after=nope`, { token: tenant.token }), 'after', 'InvalidFormat');
    const first = await stack.request('GET', `${path}?limit=1`, { token: tenant.token });
    const both = await stack.request('GET', `${path}?after=${ids[0]}&cursor=${encodeURIComponent(first.body.metadata.nextCursor)}`, { token: tenant.token });
    expectInvalidParameter(both, 'after', 'InvalidFormat');
    expectInvalidParameter(await stack.request('GET', `${path}?type=shipment.exploded`, { token: tenant.token }), 'type', 'InvalidFormat');
  });

  it('pages every event exactly once while events keep arriving', async () => {
    const before = await feedIds(stack, tenant);
    const writing = (async () => {
      const written: string[] = [];
      for (let i = 0; i < 20; i++) written.push(...(await writeEvents(oms, [shipmentEvent(tenant, `w${i}`), shipmentEvent(tenant, `x${i}`)])));
      return written;
    })();
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const suffix: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const page = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/events?limit=3${suffix}`, { token: tenant.token });
      paged.push(...page.body.items.map((event: { id: string }) => event.id));
      cursor = page.body.metadata.nextCursor;
    } while (cursor);
    const written = await writing;
    expect(new Set(paged).size).toBe(paged.length);
    for (const id of before) expect(paged).toContain(id);
    // Once everything written has arrived, the pages and what follows the last of them are the whole
    // feed, in order: nothing written while paging was skipped behind the cursor, nothing came twice.
    const all = await eventually(() => feedIds(stack, tenant), (found) => written.every((id) => found.includes(id)), 'the written events');
    const rest = await feedIds(stack, tenant, `after=${paged.at(-1)}`);
    expect([...paged, ...rest]).toEqual(all);
  });

  it('lets a Viewer read the feed', async () => {
    const viewer = await createTenant(stack, { role: 'Viewer' });
    const response = await stack.request('GET', `/v1/accounts/${viewer.accountIds[0]}/events`, { token: viewer.token });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ items: [], metadata: { nextCursor: null } });
  });

  it('deletes events past EVENTS_RETENTION_DAYS; `after` one of them is then EventNotFound', async () => {
    const [old, recent] = await writeEvents(oms, [shipmentEvent(tenant, 'old'), shipmentEvent(tenant, 'recent')]);
    await eventually(() => feedIds(stack, tenant), (found) => found.includes(recent!), 'the two events');
    await oms.query("UPDATE events SET recorded_at = now() - interval '31 days' WHERE id = $1", [old]);
    await eventually(() => feedIds(stack, tenant), (found) => !found.includes(old!), 'retention');
    expect(await feedIds(stack, tenant)).toContain(recent);
    const response = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/events?after=${old}`, { token: tenant.token });
    expectInvalidParameter(response, 'after', 'EventNotFound');
  });
});

describe('events: several relays on one database', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start({ omsReplicas: 3, workers: 1 });
    tenant = await createTenant(stack);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('publish every event once and each writer\'s events in the order it committed them, whichever relay takes a turn', async () => {
    const writers = await Promise.all(Array.from({ length: 4 }, () => connectOms(stack)));
    try {
      const written = await Promise.all(
        writers.map(async (client, writer) => {
          const ids: string[] = [];
          for (let i = 0; i < 25; i++) ids.push(...(await writeEvents(client, [shipmentEvent(tenant, `w${writer}-${i}a`), shipmentEvent(tenant, `w${writer}-${i}b`)])));
          return ids;
        }),
      );
      const all = written.flat();
      const feed = await eventually(() => feedIds(stack, tenant), (found) => all.every((id) => found.includes(id)), 'every event');
      expect(feed).toHaveLength(all.length);
      for (const ids of written) expect(feed.filter((id) => ids.includes(id))).toEqual(ids);
      expect(await streamMessages(stack.env.NATS_SUBJECT_PREFIX!, 'EVENTS')).toBe(all.length);
    } finally {
      await Promise.all(writers.map((client) => client.end()));
    }
  });
});

describe('events: crashes between the steps', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let oms: pg.Client;

  beforeAll(async () => {
    // No relay anywhere at first: committed events wait in the outbox.
    stack = await TestStack.start({ env: { OUTBOX_RELAY_ENABLED: 'false' } });
    tenant = await createTenant(stack);
    oms = await connectOms(stack);
  });

  afterAll(async () => {
    await oms?.end();
    await stack?.stop();
  });

  it('loses nothing and stores nothing twice when the relay dies after publishing and before marking sent', async () => {
    const ids = await writeEvents(oms, [1, 2, 3, 4].map((n) => shipmentEvent(tenant, `crash-${n}`)));
    const script = fileURLToPath(new URL('../support/scripts/relay-then-die.mjs', import.meta.url));
    const child = spawn(process.execPath, [script], { env: { ...process.env, ...stack.env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [, signal] = (await once(child, 'exit')) as [number | null, string | null];
    expect(signal).toBe('SIGKILL');
    expect(output).toContain('published 4');
    // Published, and still in the outbox: the relay died before its transaction could delete them.
    expect((await oms.query('SELECT msg_id FROM outbox ORDER BY seq')).rows.map((row) => row.msg_id)).toEqual(ids);
    const stored = await streamMessages(stack.env.NATS_SUBJECT_PREFIX!, 'EVENTS');
    expect(stored).toBe(4);
    // A replica with its relay on publishes them again: JetStream drops the duplicates, the feed holds each once.
    stack.env.OUTBOX_RELAY_ENABLED = 'true';
    await stack.startOmsReplica();
    await eventually(async () => (await oms.query('SELECT count(*)::int AS n FROM outbox')).rows[0].n as number, (n) => n === 0, 'the outbox to drain');
    expect(await streamMessages(stack.env.NATS_SUBJECT_PREFIX!, 'EVENTS')).toBe(4);
    const feed = await eventually(() => feedIds(stack, tenant), (found) => ids.every((id) => found.includes(id)), 'the feed');
    expect(feed).toEqual(ids);
  });

  it('stores an event once even when the stream carries it twice (published again after the duplicate window)', async () => {
    const [id] = await writeEvents(oms, [shipmentEvent(tenant, 'twice')]);
    const payload = (await oms.query('SELECT payload FROM outbox WHERE msg_id = $1', [id])).rows[0]?.payload as string | undefined;
    await eventually(() => feedIds(stack, tenant), (found) => found.includes(id!), 'the event');
    // The same envelope again under another message id, as a republication after the window would be.
    expect(payload).toBeDefined();
    await oms.query("INSERT INTO outbox (msg_id, subject, payload) VALUES (gen_random_uuid(), 'events.x', $1)", [payload]);
    const [marker] = await writeEvents(oms, [shipmentEvent(tenant, 'marker')]);
    const feed = await eventually(() => feedIds(stack, tenant), (found) => found.includes(marker!), 'the marker');
    expect(feed.filter((found) => found === id)).toHaveLength(1);
  });
});

describe('events: from the API to the feed', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('shows every change the API made, in order, with the data the API answered', async () => {
    const account = tenant.accountIds[0]!;
    const shipment = await createShipment(stack, tenant);
    const set = (await createSet(stack, tenant, shipment.id)).set;
    const device = (await createDevice(stack, tenant)).device;
    const assign = await stack.request('PUT', `/v1/accounts/${account}/shipments/${shipment.id}/sets/${set.id}/devices/${device.id}`, { token: tenant.token });
    expect(assign.status, assign.text).toBeLessThan(300);
    const started = await stack.request('POST', `/v1/accounts/${account}/shipments/${shipment.id}/start`, { token: tenant.token });
    expect(started.status, started.text).toBeLessThan(300);
    const current = await stack.request('GET', `/v1/accounts/${account}/shipments/${shipment.id}`, { token: tenant.token });
    const wanted = ['shipment.created', 'device.created', 'device.assigned', 'shipment.started'];
    const events = await eventually(
      async () => (await stack.request('GET', `/v1/accounts/${account}/events?limit=100`, { token: tenant.token })).body.items as { type: string; data: unknown }[],
      (items) => wanted.every((type) => items.some((event) => event.type === type)),
      'the four events',
    );
    const byType = (type: string) => events.filter((event) => event.type === type);
    expect(wanted.map((type) => byType(type).length)).toEqual([1, 1, 1, 1]);
    expect(byType('shipment.created')[0]!.data).toEqual(shipment);
    expect(byType('device.created')[0]!.data).toEqual(device);
    expect(byType('device.assigned')[0]!.data).toEqual({ deviceId: device.id, shipmentId: shipment.id, setId: set.id });
    expect(byType('shipment.started')[0]!.data).toEqual(current.body);
    const position = (type: string) => events.findIndex((event) => event.type === type);
    // The OMS's own events in the order it committed them.
    expect(position('shipment.created')).toBeLessThan(position('shipment.started'));
  });
});

describe('events: a service killed between its commit and the publication', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    // The only OMS is a process of its own whose relay is off: what it commits waits in the outbox.
    stack = await TestStack.start({ omsReplicas: 0, env: { OUTBOX_RELAY_ENABLED: 'false' } });
    tenant = await createTenant(stack);
  });

  afterAll(async () => {
    await killServices();
    await stack?.stop();
  });

  it('loses none of its committed events: the next relay publishes them, once', async () => {
    const oms = await spawnService(stack, 'oms');
    const shipment = await createShipment(stack, tenant);
    const client = await connectOms(stack);
    try {
      expect((await client.query('SELECT count(*)::int AS n FROM outbox')).rows[0].n).toBe(1);
      await oms.kill9();
      stack.env.OUTBOX_RELAY_ENABLED = 'true';
      await stack.startOmsReplica();
      const page = await eventually(
        async () => (await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/events`, { token: tenant.token })).body.items as { type: string; data: unknown }[],
        (items) => items.length > 0,
        'the event',
      );
      expect(page).toEqual([expect.objectContaining({ type: 'shipment.created', data: shipment })]);
      await eventually(async () => (await client.query('SELECT count(*)::int AS n FROM outbox')).rows[0].n as number, (n) => n === 0, 'the outbox to drain');
    } finally {
      await client.end();
    }
  });
});
