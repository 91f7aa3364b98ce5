import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { etagOf, OperationWaitTimeoutError, type Shipment, TrackingApiError, TrackingClient, type TrackingClientOptions } from '@tracking/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { SigningKeysService } from '../../apps/gateway/src/auth/signing-keys.service.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { UUID } from '../support/http-assertions.js';
import { untilWaitingForLock } from '../support/medium.js';
import { errorResponse, RecordingFetch } from '../support/recording-fetch.js';
import { TestStack } from '../support/stack.js';

/** A client of the tenant's application through a recording fetch; retries without long backoffs. */
function clientFor(stack: TestStack, tenant: TestTenant, overrides: Partial<TrackingClientOptions> = {}) {
  const recording = new RecordingFetch();
  const client = new TrackingClient({
    baseUrl: stack.baseUrl,
    tenantId: tenant.tenantId,
    applicationId: tenant.applicationId,
    applicationSecret: tenant.applicationSecret,
    fetch: recording.fetch,
    retry: { baseDelayMs: 10, maxDelayMs: 50 },
    ...overrides,
  });
  return { client, recording, account: client.account(tenant.accountIds[0]!) };
}

/** What `fn` rejected with (fails the test when it resolved). */
async function rejectionOf(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** The account's shipments as the API lists them to the test's own token, by reference. */
async function shipmentsWithReference(stack: TestStack, tenant: TestTenant, reference: string): Promise<Shipment[]> {
  const response = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/shipments?reference=${encodeURIComponent(reference)}`, { token: tenant.token });
  expect(response.status, response.text).toBe(200);
  return response.body.items;
}

describe('the SDK against the real stack', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start({ workers: 1 });
    tenant = await createTenant(stack);
  });
  afterAll(() => stack?.stop());

  describe('the token', () => {
    it('is requested once for 50 calls that start at once, and reused by later calls', async () => {
      const { account, recording } = clientFor(stack, tenant);
      const created = await Promise.all(Array.from({ length: 50 }, (_, i) => account.shipments.create({ name: `Concurrent ${i}` })));
      expect(new Set(created.map((shipment) => shipment.id)).size).toBe(50);
      await account.shipments.get(created[0]!.id);
      expect(recording.tokenRequests).toHaveLength(1);
      const bearers = new Set(recording.records.filter((record) => record.authorization).map((record) => record.authorization));
      expect(bearers.size).toBe(1);
      expect(recording.records).toHaveLength(52);
    });

    it('is one per client: two clients of the same application each get their own', async () => {
      const first = clientFor(stack, tenant);
      const second = clientFor(stack, tenant);
      await Promise.all([first.account.shipments.list({ limit: 1 }).toArray(), second.account.shipments.list({ limit: 1 }).toArray()]);
      expect([first.recording.tokenRequests.length, second.recording.tokenRequests.length]).toEqual([1, 1]);
    });

    it('is asked for again after a failed token request, and wrong credentials fail every waiting call with the 401', async () => {
      const { account, recording } = clientFor(stack, tenant, { applicationSecret: 'not-the-secret' });
      const errors = await Promise.all(Array.from({ length: 5 }, () => rejectionOf(() => account.shipments.list().toArray())));
      for (const error of errors) expect(error).toMatchObject({ name: 'TrackingApiError', status: 401, code: 'Unauthorized' });
      expect(errors[0]).toBeInstanceOf(TrackingApiError);
      // One shared request for the five calls, not retried (a 401 is final), and no API call without a token.
      expect(recording.tokenRequests).toHaveLength(1);
      expect(recording.records).toHaveLength(1);
      await rejectionOf(() => account.shipments.get(randomUUID()));
      expect(recording.tokenRequests).toHaveLength(2);
    });
  });

  describe('resources', () => {
    it('creates, reads, updates with If-Match and deletes, and reports errors with status, code, details, errorId and requestId', async () => {
      const { account, recording } = clientFor(stack, tenant);
      const reference = `REF-${randomUUID()}`;
      const created = await account.shipments.create({ name: 'Rotterdam to Lyon', reference, tags: ['sdk'] });
      expect(created).toMatchObject({ id: expect.stringMatching(UUID), name: 'Rotterdam to Lyon', reference, status: 'Planned', tags: ['sdk'] });
      expect(etagOf(created)).toBe('"1"');
      // The ETag is not part of the resource's JSON.
      expect(JSON.parse(JSON.stringify(created))).toEqual({ ...created });

      const read = await account.shipments.get(created.id);
      expect(read).toEqual(created);
      const updated = await account.shipments.update(created.id, { name: 'Rotterdam to Milan' }, { ifMatch: etagOf(read) });
      expect({ name: updated.name, etag: etagOf(updated) }).toEqual({ name: 'Rotterdam to Milan', etag: '"2"' });

      const stale = await rejectionOf(() => account.shipments.update(created.id, { name: 'Lost update' }, { ifMatch: etagOf(read) }));
      expect(stale).toBeInstanceOf(TrackingApiError);
      const error = stale as TrackingApiError;
      expect({ status: error.status, code: error.code, errorId: error.errorId }).toEqual({ status: 412, code: 'PreconditionFailed', errorId: expect.stringMatching(UUID) });
      expect(error.requestId).toBeTruthy();
      expect(error.message).toBeTruthy();

      const missing = (await rejectionOf(() => account.shipments.get(randomUUID()))) as TrackingApiError;
      expect(missing).toMatchObject({ status: 404, code: 'ShipmentNotExists' });
      const invalid = (await rejectionOf(() => account.shipments.create({ name: '' }))) as TrackingApiError;
      expect(invalid).toMatchObject({ status: 400, code: 'InvalidParameter', details: { field: 'name' } });

      await account.shipments.delete(created.id, { ifMatch: '"2"' });
      expect(await rejectionOf(() => account.shipments.get(created.id))).toMatchObject({ status: 404, code: 'ShipmentNotExists' });
      // 4xx answers are final: each was sent once.
      expect(recording.records.filter((record) => record.status !== 200 && record.status !== 201 && record.status !== 204)).toHaveLength(4);
    });

    it('runs the lifecycle actions and returns the new ETag; a wrong state is 409 InvalidStateTransition with its details', async () => {
      const { account } = clientFor(stack, tenant);
      const shipment = await account.shipments.create({ name: 'Lifecycle' });
      expect(await account.shipments.start(shipment.id)).toEqual({ etag: '"2"' });
      await account.shipments.deliver(shipment.id, { ifMatch: '"2"' });
      await account.shipments.complete(shipment.id);
      expect((await account.shipments.get(shipment.id)).status).toBe('Completed');
      const refused = await rejectionOf(() => account.shipments.cancel(shipment.id));
      expect(refused).toMatchObject({ status: 409, code: 'InvalidStateTransition', details: { from: 'Completed', action: 'cancel' } });
    });

    it('reaches sets, items, points of interest, devices and assignments', async () => {
      const { account } = clientFor(stack, tenant);
      const shipment = await account.shipments.create({ name: 'With contents' });
      const set = await account.sets.create(shipment.id, { name: 'Pallet 1', kind: 'Pallet' });
      const item = await account.items.create(shipment.id, set.id, { sku: 'SKU-1', quantity: 3 });
      expect(await account.items.list(shipment.id, set.id).toArray()).toEqual([item]);
      const poi = await account.pointsOfInterest.create({ name: 'Depot', kind: 'Warehouse', location: { lat: 51.9, lng: 4.4 } });
      expect((await account.pointsOfInterest.get(poi.id)).name).toBe('Depot');
      const device = await account.devices.create({ serialNumber: `SN-${randomUUID()}`, model: 'T4' });
      await account.sets.assignDevice(shipment.id, set.id, device.id);
      expect((await account.sets.get(shipment.id, set.id)).deviceIds).toEqual([device.id]);
      expect((await account.shipments.devices(shipment.id).toArray()).map(({ id }) => id)).toEqual([device.id]);
      expect(await rejectionOf(() => account.devices.retire(device.id))).toMatchObject({ status: 409, code: 'DeviceAssigned' });
      await account.sets.unassignDevice(shipment.id, set.id, device.id);
      await account.devices.retire(device.id);
      expect((await account.devices.get(device.id)).status).toBe('Retired');
    });

    it('creates, lists and deletes device credentials: the secret only in the create answer, errors with their codes', async () => {
      const { account } = clientFor(stack, tenant);
      const device = await account.devices.create({ serialNumber: `SN-${randomUUID()}`, model: 'T4' });
      const mqtt = await account.devices.createCredential(device.id, { protocol: 'Mqtt', identifier: `sdk-${device.id.slice(-12)}` });
      expect(mqtt).toMatchObject({ id: expect.stringMatching(UUID), deviceId: device.id, protocol: 'Mqtt', identifier: `sdk-${device.id.slice(-12)}`, secret: expect.stringMatching(/^dvs_/) });
      const http = await account.devices.createCredential(device.id, { protocol: 'Http' });
      expect(http).toMatchObject({ protocol: 'Http', identifier: device.id });
      const listed = await account.devices.credentials(device.id).toArray();
      expect(listed.map(({ id }) => id)).toEqual([mqtt.id, http.id]);
      expect(listed.every((credential) => !('secret' in credential))).toBe(true);
      await account.devices.deleteCredential(device.id, mqtt.id);
      expect((await account.devices.credentials(device.id).toArray()).map(({ id }) => id)).toEqual([http.id]);
      expect(await rejectionOf(() => account.devices.deleteCredential(device.id, mqtt.id))).toMatchObject({ status: 404, code: 'CredentialNotExists' });
      expect(await rejectionOf(() => account.devices.createCredential(device.id, { protocol: 'Teltonika' }))).toMatchObject({ status: 400, code: 'InvalidParameter' });
      expect(await rejectionOf(() => account.devices.createCredential(randomUUID(), { protocol: 'Http' }))).toMatchObject({ status: 404, code: 'DeviceNotExists' });
    });
  });

  describe('auto-paging', () => {
    it('walks every page in order, one request per page, and gives the total when asked', async () => {
      const other = await createTenant(stack);
      const { account, recording } = clientFor(stack, other);
      const created: Shipment[] = [];
      for (let i = 0; i < 7; i++) created.push(await account.shipments.create({ name: `Paged ${i}` }));
      const before = recording.records.length;

      const listed: string[] = [];
      for await (const shipment of account.shipments.list({ limit: 3 })) listed.push(shipment.id);
      expect(listed).toEqual(created.map(({ id }) => id));
      const pageRequests = recording.records.slice(before).map(({ path }) => path);
      expect(pageRequests).toHaveLength(3);
      expect(pageRequests[0]).toBe(`/v1/accounts/${other.accountIds[0]}/shipments?limit=3`);
      expect(pageRequests.slice(1).every((path) => path.includes('cursor='))).toBe(true);

      const pages = [];
      for await (const page of account.shipments.list({ limit: 5, includeTotal: true }).pages()) pages.push(page);
      expect(pages.map(({ records, total }) => ({ count: records.length, total }))).toEqual([
        { count: 5, total: 7 },
        { count: 2, total: 7 },
      ]);
      expect(pages[1]!.nextCursor).toBeNull();

      // Filters travel with every page; a record created while paging appears on a later page.
      const started = await account.shipments.create({ name: 'Started' });
      await account.shipments.start(started.id);
      const seen: string[] = [];
      for await (const shipment of account.shipments.list({ status: 'Planned', limit: 2 })) {
        seen.push(shipment.id);
        if (seen.length === 1) seen.push((await account.shipments.create({ name: 'Created while paging' })).id);
      }
      expect(seen.slice(0, 1).concat(seen.slice(2))).toEqual([...created.map(({ id }) => id), seen[1]]);
    });

    it("lists the application's accounts with their role, page by page", async () => {
      const other = await createTenant(stack, { accounts: 3 });
      const { client, recording } = clientFor(stack, other);
      const before = recording.records.length;
      const accounts = await client.accounts({ limit: 2 }).toArray();
      expect(accounts).toEqual(other.accountIds.map((id, i) => ({ id, name: `Account ${i + 1}`, role: 'Admin' })));
      const paths = recording.records.slice(before).map(({ path }) => path).filter((path) => path.startsWith('/v1/accounts'));
      expect(paths).toHaveLength(2);
      expect(paths[0]).toBe('/v1/accounts?limit=2');
    });

    it('lists devices under their own key', async () => {
      const other = await createTenant(stack);
      const { account } = clientFor(stack, other);
      const devices = [];
      for (let i = 0; i < 3; i++) devices.push(await account.devices.create({ serialNumber: `SN-${randomUUID()}`, model: 'T4' }));
      expect((await account.devices.list({ limit: 2 }).toArray()).map(({ id }) => id)).toEqual(devices.map(({ id }) => id));
    });
  });

  describe('retries', () => {
    it('retries a POST whose 201 a proxy turned into 503 with the same Idempotency-Key: one shipment, not two', async () => {
      const { account, recording } = clientFor(stack, tenant);
      const reference = `PROXY-${randomUUID()}`;
      let spoiled = false;
      recording.intercept = async ({ method, path, forward }) => {
        const response = await forward();
        if (!spoiled && method === 'POST' && path.endsWith('/shipments') && response.status === 201) {
          spoiled = true;
          return errorResponse(503, 'ServiceUnavailable', { 'retry-after': '0' });
        }
        return response;
      };
      const shipment = await account.shipments.create({ name: 'Committed behind a flaky proxy', reference });
      const posts = recording.matching('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments`);
      expect(posts.map(({ status, realStatus, replayed }) => ({ status, realStatus, replayed }))).toEqual([
        { status: 503, realStatus: 201, replayed: false },
        { status: 201, realStatus: 201, replayed: true },
      ]);
      expect(posts[0]!.idempotencyKey).toMatch(UUID);
      expect(posts[1]!.idempotencyKey).toBe(posts[0]!.idempotencyKey);
      expect((await shipmentsWithReference(stack, tenant, reference)).map(({ id }) => id)).toEqual([shipment.id]);
    });

    it('waits out 409 IdempotencyKeyInUse while the first attempt still runs, then gets its replay', async () => {
      const { account, recording } = clientFor(stack, tenant);
      await account.shipments.list({ limit: 1 }).toArray();
      const reference = `SLOW-${randomUUID()}`;
      // The OMS cannot insert a shipment while the test holds this lock: the first attempt stays in flight.
      const holder = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
      const observer = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
      await Promise.all([holder.connect(), observer.connect()]);
      try {
        await holder.query('BEGIN');
        await holder.query('LOCK TABLE shipments IN SHARE MODE');
        let first: Promise<Response> | undefined;
        recording.intercept = async ({ method, forward }) => {
          if (method !== 'POST' || first) return forward();
          // A proxy that gives up on the slow first attempt (which goes on at the gateway) and answers 504.
          first = forward();
          await untilWaitingForLock(observer);
          return errorResponse(504, 'GatewayTimeout');
        };
        const created = account.shipments.create({ name: 'Slow first attempt', reference });
        await vi.waitFor(() => expect(recording.records.some(({ status }) => status === 409)).toBe(true), { timeout: 10000 });
        await holder.query('COMMIT');
        const shipment = await created;
        expect((await first)!.status).toBe(201);
        const posts = recording.matching('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments`);
        expect(posts.map(({ status, replayed }) => ({ status, replayed }))).toEqual([
          { status: 504, replayed: false },
          { status: 409, replayed: false },
          { status: 201, replayed: true },
        ]);
        expect(posts[1]!.retryAfter).toBe('1');
        expect(posts[2]!.startedAt - posts[1]!.startedAt).toBeGreaterThanOrEqual(950);
        expect(new Set(posts.map(({ idempotencyKey }) => idempotencyKey)).size).toBe(1);
        expect((await shipmentsWithReference(stack, tenant, reference)).map(({ id }) => id)).toEqual([shipment.id]);
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        await Promise.all([holder.end(), observer.end()]);
      }
    });

    it('gives every POST a key of its own, and uses the one the caller passes', async () => {
      const { account, recording } = clientFor(stack, tenant);
      const first = await account.shipments.create({ name: 'Same body' });
      const second = await account.shipments.create({ name: 'Same body' });
      expect(first.id).not.toBe(second.id);
      const key = `caller-${randomUUID()}`;
      const third = await account.shipments.create({ name: 'Keyed' }, { idempotencyKey: key });
      const again = await account.shipments.create({ name: 'Keyed' }, { idempotencyKey: key });
      expect(again.id).toBe(third.id);
      const keys = recording.matching('POST', /\/shipments$/).map(({ idempotencyKey }) => idempotencyKey);
      expect(new Set(keys.slice(0, 2)).size).toBe(2);
      expect(keys.slice(2)).toEqual([key, key]);
    });

    it('retries a GET after a network error and after 500, 502 and 504', async () => {
      const { account, recording } = clientFor(stack, tenant);
      const shipment = await account.shipments.create({ name: 'Read through failures' });
      const failures: (number | 'network')[] = ['network', 500, 502, 504];
      recording.intercept = async ({ method, forward }) => {
        const failure = method === 'GET' ? failures.shift() : undefined;
        if (failure === 'network') throw new TypeError('fetch failed');
        if (failure !== undefined) return errorResponse(failure, 'InternalError');
        return forward();
      };
      expect((await account.shipments.get(shipment.id)).id).toBe(shipment.id);
      expect(recording.matching('GET', /shipments\//).map(({ status }) => status)).toEqual(['network-error', 500, 502, 504, 200]);
    });

    it('retries a PATCH whose answer was lost: the change is applied once', async () => {
      const { account, recording } = clientFor(stack, tenant);
      const shipment = await account.shipments.create({ name: 'Before' });
      let spoiled = false;
      recording.intercept = async ({ method, forward }) => {
        const response = await forward();
        if (method === 'PATCH' && !spoiled) {
          spoiled = true;
          return errorResponse(502, 'BadGateway');
        }
        return response;
      };
      const updated = await account.shipments.update(shipment.id, { name: 'After' });
      expect({ name: updated.name, etag: etagOf(updated) }).toEqual({ name: 'After', etag: '"2"' });
      expect(recording.matching('PATCH', /shipments\//).map(({ status, realStatus }) => [status, realStatus])).toEqual([
        [502, 200],
        [200, 200],
      ]);
    });

    it('reports a DELETE whose 204 was lost as done when the retry finds the resource gone', async () => {
      const { account, recording } = clientFor(stack, tenant);
      const shipment = await account.shipments.create({ name: 'Deleted behind a proxy' });
      let spoiled = false;
      recording.intercept = async ({ method, forward }) => {
        const response = await forward();
        if (method === 'DELETE' && !spoiled) {
          spoiled = true;
          return errorResponse(504, 'GatewayTimeout');
        }
        return response;
      };
      await account.shipments.delete(shipment.id);
      expect(recording.matching('DELETE', /shipments\//).map(({ realStatus }) => realStatus)).toEqual([204, 404]);
      // Without a lost answer a 404 stays a 404.
      expect(await rejectionOf(() => account.shipments.delete(shipment.id))).toMatchObject({ status: 404, code: 'ShipmentNotExists' });
    });

    it('stops after maxAttempts and throws the last answer', async () => {
      const { account, recording } = clientFor(stack, tenant, { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } });
      await account.shipments.list({ limit: 1 }).toArray();
      recording.intercept = async () => errorResponse(503, 'ServiceUnavailable', { 'retry-after': '0' });
      const error = await rejectionOf(() => account.shipments.get(randomUUID()));
      expect(error).toMatchObject({ status: 503, code: 'ServiceUnavailable' });
      expect(recording.matching('GET', /shipments\/[0-9a-f-]+$/)).toHaveLength(3);
    });

    it('throws at once when Retry-After asks for longer than maxRetryAfterMs', async () => {
      const { account, recording } = clientFor(stack, tenant, { retry: { maxRetryAfterMs: 5000 } });
      await account.shipments.list({ limit: 1 }).toArray();
      recording.intercept = async () => errorResponse(503, 'ServiceUnavailable', { 'retry-after': '3600' });
      const error = (await rejectionOf(() => account.shipments.get(randomUUID()))) as TrackingApiError;
      expect({ status: error.status, retryAfterMs: error.retryAfterMs }).toEqual({ status: 503, retryAfterMs: 3600000 });
      expect(recording.matching('GET', /shipments\/[0-9a-f-]+$/)).toHaveLength(1);
    });

    it('reads an answer that is not the envelope (a proxy page) as an error with a code for its status', async () => {
      const { account, recording } = clientFor(stack, tenant, { retry: { maxAttempts: 1 } });
      await account.shipments.list({ limit: 1 }).toArray();
      recording.intercept = async () => new Response('<html>Bad gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } });
      expect(await rejectionOf(() => account.shipments.get(randomUUID()))).toMatchObject({ status: 502, code: 'BadGateway', errorId: undefined });
    });
  });

  describe('cancelling', () => {
    it('ends a wait for Retry-After at once when the signal aborts', async () => {
      const { account, recording } = clientFor(stack, tenant);
      await account.shipments.list({ limit: 1 }).toArray();
      recording.intercept = async () => errorResponse(503, 'ServiceUnavailable', { 'retry-after': '30' });
      const controller = new AbortController();
      const started = Date.now();
      const call = rejectionOf(() => account.shipments.get(randomUUID(), { signal: controller.signal }));
      await vi.waitFor(() => expect(recording.matching('GET', /shipments\/[0-9a-f-]+$/)).toHaveLength(1));
      controller.abort();
      const error = await call;
      expect(error).toMatchObject({ name: 'AbortError' });
      expect(Date.now() - started).toBeLessThan(5000);
      expect(recording.matching('GET', /shipments\/[0-9a-f-]+$/)).toHaveLength(1);
    });

    it('sends nothing for an aborted signal, and stops a listing between pages', async () => {
      const { account, recording } = clientFor(stack, tenant);
      const aborted = AbortSignal.abort();
      expect(await rejectionOf(() => account.shipments.create({ name: 'Never' }, { signal: aborted }))).toMatchObject({ name: 'AbortError' });
      expect(recording.records).toHaveLength(0);

      const controller = new AbortController();
      const seen: string[] = [];
      const error = await rejectionOf(async () => {
        for await (const shipment of account.shipments.list({ limit: 2 }, { signal: controller.signal })) {
          seen.push(shipment.id);
          if (seen.length === 2) controller.abort();
        }
      });
      expect(error).toMatchObject({ name: 'AbortError' });
      expect(seen).toHaveLength(2);
      expect(recording.matching('GET', /\/shipments\?/)).toHaveLength(1);
    });

    it('lets one caller give up waiting for the shared token without failing the others', async () => {
      const { account, recording } = clientFor(stack, tenant);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      recording.intercept = async ({ path, forward }) => {
        if (path === '/v1/applications/token') await held;
        return forward();
      };
      const controller = new AbortController();
      const impatient = rejectionOf(() => account.shipments.list({ limit: 1 }, { signal: controller.signal }).toArray());
      const patient = account.shipments.list({ limit: 1 }).toArray();
      await vi.waitFor(() => expect(recording.tokenRequests).toHaveLength(1));
      controller.abort();
      expect(await impatient).toMatchObject({ name: 'AbortError' });
      release();
      expect(Array.isArray(await patient)).toBe(true);
      expect(recording.tokenRequests).toHaveLength(1);
    });
  });

  describe('operations', () => {
    it('waits for a bulk retire, polling as Retry-After says, and iterates its results', async () => {
      const other = await createTenant(stack);
      const { account, recording } = clientFor(stack, other);
      const devices = [];
      for (let i = 0; i < 3; i++) devices.push(await account.devices.create({ serialNumber: `SN-${randomUUID()}`, model: 'T4' }));
      const unknown = randomUUID();
      const ids = [devices[0]!.id, unknown, devices[1]!.id, devices[2]!.id];
      const operation = await account.devices.bulkRetire(ids);
      expect(operation).toMatchObject({ id: expect.stringMatching(UUID), type: 'BulkRetire', status: 'Pending' });

      const done = await account.operations.wait(operation.id, { timeoutMs: 60000 });
      expect(done).toMatchObject({ id: operation.id, status: 'PartiallySucceeded', progress: { total: 4, processed: 4, succeeded: 3, failed: 1 } });
      const polls = recording.matching('GET', `/v1/accounts/${other.accountIds[0]}/operations/${operation.id}`);
      expect(polls.length).toBeGreaterThanOrEqual(1);
      for (let i = 1; i < polls.length; i++) {
        expect(polls[i - 1]!.retryAfter).toBe('1');
        expect(polls[i]!.startedAt - polls[i - 1]!.startedAt).toBeGreaterThanOrEqual(990);
      }

      const results = [];
      for await (const result of account.operations.results(operation.id, { limit: 2 })) results.push(result);
      expect(results.map(({ index, deviceId, status, error }) => ({ index, deviceId, status, code: error?.code ?? null }))).toEqual([
        { index: 0, deviceId: ids[0], status: 'Succeeded', code: null },
        { index: 1, deviceId: unknown, status: 'Failed', code: 'DeviceNotExists' },
        { index: 2, deviceId: ids[2], status: 'Succeeded', code: null },
        { index: 3, deviceId: ids[3], status: 'Succeeded', code: null },
      ]);
      expect((await account.operations.results(operation.id, { status: 'Failed' }).toArray()).map(({ index }) => index)).toEqual([1]);
      expect((await account.operations.list().toArray()).map(({ id }) => id)).toEqual([operation.id]);
    });

    it('waits for a bulk assignment', async () => {
      const other = await createTenant(stack);
      const { account } = clientFor(stack, other);
      const shipment = await account.shipments.create({ name: 'Bulk' });
      const set = await account.sets.create(shipment.id, { name: 'Pallet', kind: 'Pallet' });
      const device = await account.devices.create({ serialNumber: `SN-${randomUUID()}`, model: 'T4' });
      const operation = await account.sets.bulkAssign([{ setId: set.id, deviceId: device.id }]);
      expect((await account.operations.wait(operation.id, { timeoutMs: 60000 })).status).toBe('Succeeded');
      expect((await account.devices.get(device.id)).setId).toBe(set.id);
    });

    it('reads a track as GeoJSON: a FeatureCollection with one LineString per device, [lng, lat]', async () => {
      const { account, recording } = clientFor(stack, tenant);
      const shipment = await account.shipments.create({ name: 'Mapped' });
      const set = await account.sets.create(shipment.id, { name: 'Pallet', kind: 'Pallet' });
      const device = await account.devices.create({ serialNumber: `SN-${randomUUID()}`, model: 'T4' });
      await account.sets.assignDevice(shipment.id, set.id, device.id);
      const start = Date.now() + 1;
      const readings = [0, 1, 2].map((i) => ({
        deviceId: device.id,
        recordedAt: new Date(start + i * 10).toISOString(),
        location: { lat: 51.9 + i / 100, lng: 4.4 + i / 100 },
      }));
      // Recorded after the assignment, so on the shipment's track (sent once the clock has passed them).
      await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(start + 30));
      expect(await account.readings.create(readings)).toMatchObject({ accepted: 3 });

      const geojson = await account.shipments.trackGeoJson(shipment.id);
      expect(geojson).toEqual({
        type: 'FeatureCollection',
        features: [
          {
            type: 'Feature',
            geometry: { type: 'LineString', coordinates: readings.map(({ location }) => [location.lng, location.lat]) },
            properties: { deviceId: device.id, recordedAt: readings.map(({ recordedAt }) => recordedAt), accuracyMeters: [null, null, null] },
          },
        ],
      });
      expect(recording.records.at(-1)).toMatchObject({ method: 'GET', status: 200 });
      // The same points as the JSON track, filters included.
      const track = await account.shipments.track(shipment.id, { deviceId: device.id });
      expect(track.points.map((point) => [point.lng, point.lat])).toEqual(geojson.features[0]!.geometry.coordinates);
      expect(await account.shipments.trackGeoJson(shipment.id, { deviceId: randomUUID() })).toEqual({ type: 'FeatureCollection', features: [] });
    });

    it('an unknown operation is OperationNotExists, not a wait forever', async () => {
      const { account } = clientFor(stack, tenant);
      expect(await rejectionOf(() => account.operations.wait(randomUUID(), { timeoutMs: 5000 }))).toMatchObject({ status: 404, code: 'OperationNotExists' });
    });
  });
});

describe('the SDK when the gateway refuses its token, and over time', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    // No workers: operations stay Pending.
    stack = await TestStack.start();
    tenant = await createTenant(stack);
  });
  afterAll(() => stack?.stop());
  afterEach(() => vi.useRealTimers());

  it('gets a new token on a 401 and retries the call once: the signing key was revoked and the gateway restarted', async () => {
    const { account, recording } = clientFor(stack, tenant);
    const shipment = await account.shipments.create({ name: 'Before the revocation' });
    const oldBearer = recording.records.at(-1)!.authorization;

    // Emergency revocation: a new signing key, the old one retired long enough ago to stop verifying.
    const keys = stack.gateway.get(SigningKeysService);
    const oldKid = keys.signingKey().kid;
    await keys.rotate();
    const database = new pg.Client({ connectionString: stack.env.GATEWAY_DATABASE_URL });
    await database.connect();
    try {
      const { rowCount } = await database.query(`UPDATE signing_keys SET retired_at = now() - interval '3 days' WHERE kid = $1`, [oldKid]);
      expect(rowCount).toBe(1);
    } finally {
      await database.end();
    }
    await stack.restartGateway();
    const refused = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/shipments/${shipment.id}`, { token: oldBearer!.slice(7) });
    expect(refused.status).toBe(401);

    const before = recording.records.length;
    expect((await account.shipments.get(shipment.id)).id).toBe(shipment.id);
    expect(recording.records.slice(before).map(({ method, path, status }) => `${method} ${path} ${status}`)).toEqual([
      `GET /v1/accounts/${tenant.accountIds[0]}/shipments/${shipment.id} 401`,
      'POST /v1/applications/token 200',
      `GET /v1/accounts/${tenant.accountIds[0]}/shipments/${shipment.id} 200`,
    ]);
    expect(recording.records.at(-1)!.authorization).not.toBe(oldBearer);
  });

  it('refreshes only once for many calls refused with the same token, and retries each call only once', async () => {
    const { account, recording } = clientFor(stack, tenant);
    await account.shipments.list({ limit: 1 }).toArray();
    // Every answer a 401 from here on (a gateway that refuses even new tokens): one refresh, then the error.
    recording.intercept = async ({ path, forward }) => (path === '/v1/applications/token' ? forward() : errorResponse(401, 'Unauthorized'));
    const errors = await Promise.all(Array.from({ length: 10 }, () => rejectionOf(() => account.shipments.list({ limit: 1 }).toArray())));
    for (const error of errors) expect(error).toMatchObject({ status: 401, code: 'Unauthorized' });
    expect(recording.tokenRequests).toHaveLength(2);
    expect(recording.matching('GET', /\/shipments\?/)).toHaveLength(1 + 20);
  });

  it('refreshes the token ahead of its expiry, after 23 of its 24 hours', async () => {
    const { account, recording } = clientFor(stack, tenant);
    await account.shipments.list({ limit: 1 }).toArray();
    const start = Date.now();
    // The gateway runs in this process, so it sees the same clock: the token really is that old.
    vi.useFakeTimers({ toFake: ['Date'], now: start + 22.9 * 3600 * 1000, shouldAdvanceTime: true });
    await account.shipments.list({ limit: 1 }).toArray();
    expect(recording.tokenRequests).toHaveLength(1);
    vi.setSystemTime(start + 23.01 * 3600 * 1000);
    await account.shipments.list({ limit: 1 }).toArray();
    expect(recording.tokenRequests).toHaveLength(2);
    expect(recording.records.every(({ status }) => status === 200)).toBe(true);
  });

  it('gives up waiting for an operation at timeoutMs with the operation last seen', async () => {
    const { account, recording } = clientFor(stack, tenant);
    const device = await account.devices.create({ serialNumber: `SN-${randomUUID()}`, model: 'T4' });
    const operation = await account.devices.bulkRetire([device.id]);
    const started = Date.now();
    const error = await rejectionOf(() => account.operations.wait(operation.id, { timeoutMs: 2500 }));
    expect(error).toBeInstanceOf(OperationWaitTimeoutError);
    expect((error as OperationWaitTimeoutError).operation).toMatchObject({ id: operation.id, status: 'Pending' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2400);
    expect(Date.now() - started).toBeLessThan(10000);
    // Polled about once a second, as Retry-After: 1 asks.
    const polls = recording.matching('GET', new RegExp(`/operations/${operation.id}$`)).length;
    expect(polls).toBeGreaterThanOrEqual(2);
    expect(polls).toBeLessThanOrEqual(4);
  });
});

describe('the SDK under a rate limit', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start({ env: { RATE_LIMIT_APPLICATION: '1/3s burst 1' } });
    tenant = await createTenant(stack);
  });
  afterAll(() => stack?.stop());

  /** Spends the application's bucket with the test's own token until the gateway answers 429. */
  async function exhaust(): Promise<void> {
    const deadline = Date.now() + 10000;
    for (;;) {
      const response = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/shipments?limit=1`, { token: tenant.token });
      if (response.status === 429) return;
      if (Date.now() > deadline) throw new Error('the rate limit never answered 429');
    }
  }

  it('waits as long as Retry-After says on a 429, then succeeds', async () => {
    const { account, recording } = clientFor(stack, tenant);
    await exhaust();
    const items = await account.shipments.list({ limit: 1 }).toArray();
    expect(items).toEqual([]);
    const calls = recording.matching('GET', /\/shipments\?/);
    expect(calls.map(({ status }) => status)).toEqual([429, 200]);
    const waitedMs = calls[1]!.startedAt - calls[0]!.startedAt;
    expect(Number(calls[0]!.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(waitedMs).toBeGreaterThanOrEqual(Number(calls[0]!.retryAfter) * 1000 - 50);
  });

  it('adds jitter on top of Retry-After: clients refused together come back spread out, none early', async () => {
    const clients = Array.from({ length: 6 }, () => clientFor(stack, tenant, { retry: { maxAttempts: 2 } }));
    await exhaust();
    // Six clients refused at once; each retries once, whatever the bucket then says.
    await Promise.all(clients.map(({ account }) => account.shipments.list({ limit: 1 }).toArray().catch(() => undefined)));
    const jitters = clients.map(({ recording }) => {
      const [refused, retried] = recording.matching('GET', /\/shipments\?/);
      expect(refused!.status).toBe(429);
      const retryAfterMs = Number(refused!.retryAfter) * 1000;
      expect(retryAfterMs).toBeGreaterThanOrEqual(1000);
      return retried!.startedAt - refused!.startedAt - retryAfterMs;
    });
    // Never before Retry-After (a little timer slack), and not all at the same instant, which is what
    // made 24 clients collide again and give up (the jitter is uniform over one more Retry-After).
    for (const jitter of jitters) expect(jitter).toBeGreaterThanOrEqual(-50);
    expect(Math.max(...jitters) - Math.min(...jitters), JSON.stringify(jitters)).toBeGreaterThan(200);
  });

  it('throws the 429 at once when Retry-After is longer than the policy allows', async () => {
    const { account, recording } = clientFor(stack, tenant, { retry: { maxRetryAfterMs: 500 } });
    await exhaust();
    const error = (await rejectionOf(() => account.shipments.list({ limit: 1 }).toArray())) as TrackingApiError;
    expect(error).toMatchObject({ status: 429, code: 'RateLimitExceeded', details: { policy: 'application' } });
    expect(error.retryAfterMs).toBeGreaterThanOrEqual(1000);
    expect(recording.matching('GET', /\/shipments\?/)).toHaveLength(1);
  });
});
