import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyStore } from '../../apps/gateway/src/protection/idempotency/idempotency.store.js';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { expectError, expectInvalidParameter } from '../support/http-assertions.js';
import { connectOms } from '../support/oms-database.js';
import { OwnRedisServer } from '../support/redis-server.js';
import { type HttpResult, type RequestOptions, TestStack } from '../support/stack.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Holds the OMS's `shipments` table so that inserts wait, until `release`. */
async function blockShipmentInserts(stack: TestStack): Promise<{ waitForBlockedRequest(): Promise<void>; release(): Promise<void> }> {
  const holder = await connectOms(stack);
  const observer = await connectOms(stack);
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE shipments IN EXCLUSIVE MODE');
  return {
    async waitForBlockedRequest() {
      // Polls for a condition (a session waiting for our lock), bounded; no fixed sleep.
      for (let attempt = 0; attempt < 400; attempt++) {
        if ((await lockWaiters(observer)) > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('no request ever waited for the shipments lock');
    },
    async release() {
      await holder.query('COMMIT');
      await holder.end();
      await observer.end();
    },
  };
}

async function lockWaiters(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ waiting: number }>(
    `SELECT count(*)::int AS waiting FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
  );
  return rows[0]!.waiting;
}

function expectReplayOf(replay: HttpResult, original: HttpResult): void {
  expect(replay.status).toBe(original.status);
  expect(replay.text).toBe(original.text);
  expect(replay.headers.get('location')).toBe(original.headers.get('location'));
  expect(replay.headers.get('etag')).toBe(original.headers.get('etag'));
  expect(replay.headers.get('idempotent-replayed')).toBe('true');
  expect(original.headers.get('idempotent-replayed')).toBeNull();
}

describe('Idempotency-Key on POST', () => {
  let stack: TestStack;
  let redis: Redis;
  let tenant: TestTenant;
  let shipments: string;

  beforeAll(async () => {
    stack = await TestStack.start();
    redis = new Redis(stack.env.REDIS_URL);
    tenant = await createTenant(stack);
    shipments = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
  });
  afterAll(async () => {
    redis?.disconnect();
    await stack?.stop();
  });

  function post(path: string, key: string | undefined, options: RequestOptions = {}) {
    const headers = key === undefined ? options.headers : { ...options.headers, 'idempotency-key': key };
    return stack.request('POST', path, { token: tenant.token, ...options, headers });
  }

  /** How many shipments of the tenant's first account match `filter` (`tag=...`, `reference=...`). */
  async function countShipments(filter: string): Promise<number> {
    const listed = await stack.request('GET', `${shipments}?${filter}`, { token: tenant.token });
    expect(listed.status).toBe(200);
    return listed.body.items.length;
  }

  function record(applicationId: string, key: string): string {
    return stack.gateway.get(IdempotencyStore).recordKey(applicationId, key).key;
  }

  describe('replays', () => {
    it('a created shipment: status, body, Location and ETag, marked Idempotent-Replayed', async () => {
      const key = randomUUID();
      const body = { name: 'Once only', tags: [`once-${key}`] };
      const first = await post(shipments, key, { body });
      expect(first.status).toBe(201);
      const again = await post(shipments, key, { body });
      expectReplayOf(again, first);
      expect(again.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await countShipments(`tag=once-${key}`)).toBe(1);
    });

    it('from a sealed record: Redis holds neither the body nor the headers in the clear', async () => {
      const key = randomUUID();
      const body = { name: `Sealed ${key}` };
      const first = await post(shipments, key, { body });
      expect(first.status).toBe(201);
      const stored = await redis.hget(record(tenant.applicationId, key), 'response');
      expect(stored).toMatch(/^v2\.[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(stored).not.toContain(first.body.id);
      expectReplayOf(await post(shipments, key, { body }), first);
    });

    it('the same body however its keys are ordered or spaced', async () => {
      const key = randomUUID();
      const tag = `order-${key}`;
      const first = await post(shipments, key, { rawBody: `{"name":"Ordered","tags":["${tag}"]}`, headers: { 'content-type': 'application/json' } });
      const again = await post(shipments, key, { rawBody: `{ "tags": [ "${tag}" ],\n  "name": "Ordered" }`, headers: { 'content-type': 'application/json' } });
      expectReplayOf(again, first);
      expect(await countShipments(`tag=${tag}`)).toBe(1);
    });

    it('a 204 lifecycle transition, with its ETag, without running it twice', async () => {
      const shipment = await createShipment(stack, tenant);
      const key = randomUUID();
      const first = await post(`${shipments}/${shipment.id}/start`, key);
      expect(first.status).toBe(204);
      const again = await post(`${shipments}/${shipment.id}/start`, key);
      expectReplayOf(again, first);
      expect(again.text).toBe('');
      // Run again, the transition would have been refused.
      expectError(await post(`${shipments}/${shipment.id}/start`, undefined), 409, 'InvalidStateTransition', { from: 'InTransit', action: 'start' });
    });
  });

  it('refuses the key with another request: 422 IdempotencyKeyReused', async () => {
    const key = randomUUID();
    expect((await post(shipments, key, { body: { name: 'First' } })).status).toBe(201);
    expectError(await post(shipments, key, { body: { name: 'Second' } }), 422, 'IdempotencyKeyReused');
    const shipment = await createShipment(stack, tenant);
    expectError(await post(`${shipments}/${shipment.id}/start`, key), 422, 'IdempotencyKeyReused');
  });

  it('answers 409 IdempotencyKeyInUse with Retry-After while the first request runs, then replays it', async () => {
    const key = randomUUID();
    const body = { name: 'Slow', tags: [`slow-${key}`] };
    const lock = await blockShipmentInserts(stack);
    const first = post(shipments, key, { body });
    try {
      await lock.waitForBlockedRequest();
      const during = await post(shipments, key, { body });
      expectError(during, 409, 'IdempotencyKeyInUse');
      expect(during.headers.get('retry-after')).toBe('1');
      // A marker, not a lock for ever: it expires after 3 × RPC_TIMEOUT_MS.
      const ttl = await redis.pttl(record(tenant.applicationId, key));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(3 * stack.gatewayConfig.RPC_TIMEOUT_MS);
    } finally {
      await lock.release();
    }
    const created = await first;
    expect(created.status).toBe(201);
    expectReplayOf(await post(shipments, key, { body }), created);
    expect(await countShipments(`tag=slow-${key}`)).toBe(1);
  });

  it('ten identical concurrent POSTs with one key, across two replicas, create exactly one resource', async () => {
    const replica = await stack.startGatewayReplica();
    // A few rounds, each with its own key: a check-then-set race would not hide in all of them.
    for (let round = 0; round < 5; round++) {
      const key = randomUUID();
      const body = { name: 'Raced', tags: [`race-${key}`] };
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, index) => post(shipments, key, { body, baseUrl: index % 2 === 0 ? stack.baseUrl : replica })),
      );
      const created = answers.filter((answer) => answer.status === 201);
      for (const answer of answers.filter((candidate) => candidate.status !== 201)) expectError(answer, 409, 'IdempotencyKeyInUse');
      expect(new Set(created.map((answer) => answer.body.id)).size).toBe(1);
      expect(created.filter((answer) => answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
      expect(await countShipments(`tag=race-${key}`)).toBe(1);
    }
  });

  it('scopes keys per application', async () => {
    const key = randomUUID();
    const sibling = await stack.identity.createApplication(tenant.tenantId, 'Sibling', 'Admin', '*');
    const siblingToken = await issueToken(stack, tenant.tenantId, sibling.applicationId, sibling.applicationSecret);
    const body = { name: 'Twice' };
    const mine = await post(shipments, key, { body });
    const theirs = await post(shipments, key, { body, token: siblingToken });
    const elsewhere = await createTenant(stack);
    const foreign = await post(`/v1/accounts/${elsewhere.accountIds[0]}/shipments`, key, { body, token: elsewhere.token });
    for (const answer of [mine, theirs, foreign]) {
      expect(answer.status).toBe(201);
      expect(answer.headers.get('idempotent-replayed')).toBeNull();
    }
    expect(new Set([mine.body.id, theirs.body.id, foreign.body.id]).size).toBe(3);
  });

  it('keeps an outcome 24 hours', async () => {
    const key = randomUUID();
    expect((await post(shipments, key, { body: { name: 'Kept' } })).status).toBe(201);
    const ttl = await redis.pttl(record(tenant.applicationId, key));
    expect(ttl).toBeGreaterThan(DAY_MS - 60000);
    expect(ttl).toBeLessThanOrEqual(DAY_MS);
  });

  it('keeps reserving and replaying after Redis forgets its scripts (SCRIPT FLUSH, as after a restart)', async () => {
    const key = randomUUID();
    const body = { name: 'Across a flush', tags: [`flush-${key}`] };
    await redis.script('FLUSH');
    const first = await post(shipments, key, { body });
    expect(first.status).toBe(201);
    await redis.script('FLUSH');
    expectReplayOf(await post(shipments, key, { body }), first);
    expect(await countShipments(`tag=flush-${key}`)).toBe(1);
  });

  it('refuses a key that is not 1..255 visible characters: 400 InvalidParameter', async () => {
    expectInvalidParameter(await post(shipments, 'k'.repeat(256), { body: { name: 'Long key' } }), 'Idempotency-Key', 'OutOfRange');
    expectInvalidParameter(await post(shipments, '', { body: { name: 'Empty key' } }), 'Idempotency-Key', 'OutOfRange');
    expect((await post(shipments, 'k'.repeat(255), { body: { name: 'Longest key' } })).status).toBe(201);
  });

  it('refuses a key with anything but visible ASCII (0x21-0x7E): 400 InvalidFormat, nothing created', async () => {
    const before = (await stack.request('GET', `${shipments}?includeTotal=true&limit=1`, { token: tenant.token })).body.metadata.total;
    // A space inside, a byte beyond ASCII (é in Latin-1): each refused before anything runs. (Control
    // characters never get this far: Node's HTTP parser refuses them in header values.)
    for (const key of ['order 42', 'caf\u00e9', 'a\tb']) {
      expectInvalidParameter(await post(shipments, key, { body: { name: 'Odd key' } }), 'Idempotency-Key', 'InvalidFormat');
    }
    expect((await stack.request('GET', `${shipments}?includeTotal=true&limit=1`, { token: tenant.token })).body.metadata.total).toBe(before);
    expect((await post(shipments, '!#$%&*+-.^_`|~09AZaz:/?@[]{}', { body: { name: 'Punctuated key' } })).status).toBe(201);
  });

  it('is ignored by the token endpoint, which has no application to scope it to', async () => {
    const credentials = { tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: tenant.applicationSecret };
    const headers = { 'idempotency-key': randomUUID() };
    const [first, second] = [
      await stack.request('POST', '/v1/applications/token', { body: credentials, headers }),
      await stack.request('POST', '/v1/applications/token', { body: credentials, headers }),
    ];
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.body.accessToken).not.toBe(first.body.accessToken);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
  });

  describe('stores', () => {
    it('a 409 the service decided, and replays it with the same error id', async () => {
      const reference = `dup-${randomUUID()}`;
      const existing = await createShipment(stack, tenant, { body: { reference } });
      const key = randomUUID();
      const refused = await post(shipments, key, { body: { name: 'Duplicate', reference } });
      expectError(refused, 409, 'DuplicateReference');
      expect((await stack.request('DELETE', `${shipments}/${existing.id}`, { token: tenant.token })).status).toBe(204);
      expectReplayOf(await post(shipments, key, { body: { name: 'Duplicate', reference } }), refused);
      expect(await countShipments(`reference=${reference}`)).toBe(0);
    });
  });

  describe('does not store', () => {
    it('a 404: nothing was done, so the same key runs again and finds what exists by then', async () => {
      const deviceId = randomUUID();
      const retire = `/v1/accounts/${tenant.accountIds[0]}/devices/${deviceId}/retire`;
      const key = randomUUID();
      const missing = await post(retire, key);
      expectError(missing, 404, 'DeviceNotExists');
      expect(await redis.exists(record(tenant.applicationId, key))).toBe(0);
      const dms = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
      await dms.connect();
      try {
        await dms.query(
          `INSERT INTO devices (id, tenant_id, account_id, serial_number, model, status, metadata, version, created_at, updated_at)
           VALUES ($1, $2, $3, $4, 'TempTrack T4', 'Available', '{}', 1, now(), now())`,
          [deviceId, tenant.tenantId, tenant.accountIds[0], `late-${deviceId}`],
        );
      } finally {
        await dms.end();
      }
      const retried = await post(retire, key);
      expect(retried.status, retried.text).toBe(204);
      expect(retried.headers.get('idempotent-replayed')).toBeNull();
      expectReplayOf(await post(retire, key), retried);
    });

    it('a validation failure: the key stays free for the corrected request', async () => {
      const key = randomUUID();
      expectInvalidParameter(await post(shipments, key, { body: { name: '' } }), 'name', 'OutOfRange');
      expect(await redis.exists(record(tenant.applicationId, key))).toBe(0);
      const corrected = await post(shipments, key, { body: { name: 'Corrected' } });
      expect(corrected.status).toBe(201);
      expect(corrected.headers.get('idempotent-replayed')).toBeNull();
    });

    it('a 5xx: the client retries with the same key', async () => {
      const key = randomUUID();
      const body = { name: 'After the outage', tags: [`outage-${key}`] };
      await stack.stopOmsReplicas();
      try {
        expectError(await post(shipments, key, { body }), 503, 'ServiceUnavailable');
        expect(await redis.exists(record(tenant.applicationId, key))).toBe(0);
      } finally {
        await stack.startOmsReplica();
      }
      const retried = await post(shipments, key, { body });
      expect(retried.status).toBe(201);
      expect(retried.headers.get('idempotent-replayed')).toBeNull();
      expect(await countShipments(`tag=outage-${key}`)).toBe(1);
    });

    it('a 403, nor a 400 AccountNotFound, nor a 401', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      const key = randomUUID();
      expectError(await post(`/v1/accounts/${viewer.accountIds[0]}/shipments`, key, { body: { name: 'x' }, token: viewer.token }), 403, 'Forbidden');
      expect(await redis.exists(record(viewer.applicationId, key))).toBe(0);
      const foreign = `/v1/accounts/${randomUUID()}/shipments`;
      expectInvalidParameter(await post(foreign, key, { body: { name: 'x' } }), 'accountId', 'AccountNotFound');
      expect((await post(shipments, key, { body: { name: 'x' }, token: 'not-a-token' })).status).toBe(401);
      expect(await redis.exists(record(tenant.applicationId, key))).toBe(0);
    });

    it('a 429', async () => {
      const limited = await createTenant(stack);
      const replica = await stack.startGatewayReplica({ RATE_LIMIT_APPLICATION: '1/1m' });
      const path = `/v1/accounts/${limited.accountIds[0]}/shipments`;
      expect((await stack.request('GET', path, { token: limited.token, baseUrl: replica })).status).toBe(200);
      const key = randomUUID();
      expectError(await post(path, key, { body: { name: 'x' }, token: limited.token, baseUrl: replica }), 429, 'RateLimitExceeded', {
        policy: 'application',
      });
      expect(await redis.exists(record(limited.applicationId, key))).toBe(0);
    });
  });

  it('keeps the key in flight after a gateway timeout, as the service may still finish', async () => {
    const replica = await stack.startGatewayReplica({ RPC_TIMEOUT_MS: '300' });
    const key = randomUUID();
    const body = { name: 'Timed out' };
    const lock = await blockShipmentInserts(stack);
    try {
      expectError(await post(shipments, key, { body, baseUrl: replica }), 504, 'GatewayTimeout');
      expectError(await post(shipments, key, { body, baseUrl: replica }), 409, 'IdempotencyKeyInUse');
      const ttl = await redis.pttl(record(tenant.applicationId, key));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(900);
    } finally {
      await lock.release();
    }
  });

  describe('without Redis', () => {
    it('refuses a POST with a key (503, Retry-After) and serves one without', async () => {
      const replica = await stack.startGatewayReplica({ REDIS_URL: 'redis://127.0.0.1:1' });
      const keyed = await post(shipments, randomUUID(), { body: { name: 'Unprotected' }, baseUrl: replica });
      expectError(keyed, 503, 'ServiceUnavailable');
      expect(keyed.headers.get('retry-after')).toBe('1');
      expect((await post(shipments, undefined, { body: { name: 'Plain' }, baseUrl: replica })).status).toBe(201);
    });
  });
  describe('when Redis is slow or a marker expires mid-request', () => {
    it('withdraws a reservation whose command timed out: a retry after the 503 runs, instead of 409 until the marker expires', async () => {
      // A Redis of this test alone: CLIENT PAUSE stops every client of the server it is sent to.
      const server = await OwnRedisServer.start();
      const paused = new Redis({ port: server.port, lazyConnect: true, retryStrategy: () => null });
      paused.on('error', () => undefined);
      try {
        await paused.connect();
        const replica = await stack.startGatewayReplica({ REDIS_URL: server.url, REDIS_COMMAND_TIMEOUT_MS: '100' });
        expect((await post(shipments, randomUUID(), { body: { name: 'warm' }, baseUrl: replica })).status).toBe(201);
        const key = randomUUID();
        const body = { name: `Paused ${key}` };
        // Write commands (the reservation's script) wait 700 ms: the gateway gives up after 100, Redis runs it later.
        await paused.call('CLIENT', 'PAUSE', '700', 'WRITE');
        expectError(await post(shipments, key, { body, baseUrl: replica }), 503, 'ServiceUnavailable');
        // Returns once the pause is over (a write, paused like the others), after the gateway's commands queued before it.
        await paused.set('after-the-pause', '1');
        const retried = await post(shipments, key, { body, baseUrl: replica });
        expect(retried.status, retried.text).toBe(201);
        expectReplayOf(await post(shipments, key, { body, baseUrl: replica }), retried);
      } finally {
        paused.disconnect();
        await server.stop();
      }
    });

    it('stores the outcome of a request that outlived its in-flight marker, so a retry replays it rather than running again', async () => {
      const blocker = await blockShipmentInserts(stack);
      const key = randomUUID();
      const body = { name: `Outlived ${key}`, tags: [`outlived-${key}`] };
      const pending = post(shipments, key, { body });
      await blocker.waitForBlockedRequest();
      // The marker expires while the request waits (here: removed as its TTL would).
      await redis.del(record(tenant.applicationId, key));
      await blocker.release();
      const first = await pending;
      expect(first.status).toBe(201);
      expectReplayOf(await post(shipments, key, { body }), first);
      expect(await countShipments(`tag=outlived-${key}`)).toBe(1);
    });
  });

  describe('bounds what an application stores', () => {
    const readingsPath = (who: TestTenant) => `/v1/accounts/${who.accountIds[0]}/readings`;
    /** `count` entries, each refused for an unknown key of `keyLength` characters (distinct keys: they do not compress away). */
    const unknownKeyEntries = (count: number, keyLength: number) =>
      Array.from({ length: count }, (_, index) => ({
        deviceId: randomUUID(),
        recordedAt: '2026-01-01T00:00:00Z',
        temperatureC: 1,
        [`${index}-${randomUUID()}`.padEnd(keyLength, 'k')]: 1,
      }));

    it('a 4 MB readings batch of long unknown keys: keys echoed cut, the answer stored compressed, replayed as sent', async () => {
      const key = randomUUID();
      const body = { readings: unknownKeyEntries(5000, 700) };
      const sent = await post(readingsPath(tenant), key, { body });
      expect(sent.status).toBe(200);
      const used = Number(await redis.call('MEMORY', 'USAGE', record(tenant.applicationId, key)));
      console.info(`body ${JSON.stringify(body).length} B, answer ${sent.text.length} B, record ${used} B in Redis`);
      const first = sent.body.rejected[4999];
      expect(first.error.details.issue).toBe('UnknownField');
      // `readings.4999.` and the key cut to 64 characters, the last of them the mark of the cut.
      expect(first.error.details.field).toMatch(/^readings\.4999\.4999-[0-9a-f-]{36}k{22}\u2026$/);
      expect(sent.text.length).toBeLessThan(JSON.stringify(body).length / 2);
      expect(used).toBeLessThan(256 * 1024);
      expectReplayOf(await post(readingsPath(tenant), key, { body }), sent);
    });

    it('an answer larger than IDEMPOTENCY_MAX_RESPONSE_BYTES is sent, not stored: Idempotent-Stored false, the key free again', async () => {
      const replica = await stack.startGatewayReplica({ IDEMPOTENCY_MAX_RESPONSE_BYTES: '2048' });
      const key = randomUUID();
      const body = { readings: unknownKeyEntries(200, 64) };
      const sent = await post(readingsPath(tenant), key, { body, baseUrl: replica });
      expect(sent.status).toBe(200);
      expect(sent.body.rejected).toHaveLength(200);
      expect(sent.headers.get('idempotent-stored')).toBe('false');
      expect(await redis.exists(record(tenant.applicationId, key))).toBe(0);
      const again = await post(readingsPath(tenant), key, { body, baseUrl: replica });
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBeNull();
      expect(again.headers.get('idempotent-stored')).toBe('false');
      // A small answer under the same settings is stored and replayed as before.
      const small = await post(shipments, randomUUID(), { body: { name: 'small' }, baseUrl: replica });
      expect(small.status).toBe(201);
      expect(small.headers.get('idempotent-stored')).toBeNull();
    });

    it('at most IDEMPOTENCY_MAX_BYTES_PER_APPLICATION of stored answers per application: then 429 until the oldest expires', async () => {
      const budget = 4096;
      const capped = await createTenant(stack);
      const other = await createTenant(stack);
      // Each answer stored takes about 400 bytes; a new key needs room for one of the largest (1024).
      const replica = await stack.startGatewayReplica({
        IDEMPOTENCY_MAX_BYTES_PER_APPLICATION: String(budget),
        IDEMPOTENCY_MAX_RESPONSE_BYTES: '1024',
      });
      const path = (who: TestTenant) => `/v1/accounts/${who.accountIds[0]}/shipments`;
      const send = (who: TestTenant, key: string | undefined, name: string) =>
        post(path(who), key, { body: { name }, token: who.token, baseUrl: replica });
      const sizes = stack.gateway.get(IdempotencyStore).recordKey(capped.applicationId, 'any').sizes;

      const keys: string[] = [];
      let refused: HttpResult | undefined;
      for (let i = 0; i < 40 && refused === undefined; i++) {
        const key = randomUUID();
        const answer = await send(capped, key, `budget ${i}`);
        if (answer.status === 429) refused = answer;
        else {
          // The answer's text in the message: a 401 here was seen once in a full CI run and never alone.
          expect(answer.status, `request ${i}: ${answer.text}`).toBe(201);
          expect(answer.headers.get('idempotent-stored')).toBeNull();
          keys.push(key);
        }
        expect(Number(await redis.hget(sizes, 'total'))).toBeLessThanOrEqual(budget);
      }
      expect(refused).toBeDefined();
      expectError(refused!, 429, 'RateLimitExceeded', { policy: 'idempotency-bytes', limit: budget });
      expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThan(DAY_MS / 1000 - 60);
      expect(keys.length).toBeGreaterThan(1);

      expect((await send(capped, keys[0], 'budget 0')).headers.get('idempotent-replayed')).toBe('true');
      expect((await send(capped, undefined, 'without a key')).status).toBe(201);
      expect((await send(other, randomUUID(), 'another application')).status).toBe(201);

      // Once the oldest records have expired (here: their index entries dated past), their bytes are free again.
      for (const key of keys.slice(0, 3)) {
        const oldest = stack.gateway.get(IdempotencyStore).recordKey(capped.applicationId, key);
        await redis.del(oldest.key);
        await redis.zadd(oldest.index, 1, oldest.key);
      }
      const after = await send(capped, randomUUID(), 'after the oldest expired');
      expect(after.status).toBe(201);
      expect(after.headers.get('idempotent-stored')).toBeNull();
      expect(Number(await redis.hget(sizes, 'total'))).toBeLessThanOrEqual(budget);
    });
  });

  describe('at most IDEMPOTENCY_MAX_KEYS_PER_APPLICATION keys per application', () => {
    const MAX_KEYS = 3;

    it('refuses a new key beyond the cap with 429 until the oldest expires; known keys replay, unkeyed requests pass', async () => {
      const capped = await createTenant(stack);
      const other = await createTenant(stack);
      const replica = await stack.startGatewayReplica({ IDEMPOTENCY_MAX_KEYS_PER_APPLICATION: String(MAX_KEYS) });
      const path = (who: TestTenant) => `/v1/accounts/${who.accountIds[0]}/shipments`;
      const send = (who: TestTenant, key: string | undefined, name: string) =>
        post(path(who), key, { body: { name }, token: who.token, baseUrl: replica });

      // A key whose request was refused (400) holds no record and does not count.
      expectInvalidParameter(await post(path(capped), randomUUID(), { body: { name: '' }, token: capped.token, baseUrl: replica }), 'name', 'OutOfRange');
      const keys = Array.from({ length: MAX_KEYS }, () => randomUUID());
      const created: HttpResult[] = [];
      for (const [i, key] of keys.entries()) {
        created.push(await send(capped, key, `capped ${i}`));
        expect(created[i]!.status).toBe(201);
      }

      const refused = await send(capped, randomUUID(), 'one too many');
      expectError(refused, 429, 'RateLimitExceeded', { policy: 'idempotency-keys', limit: MAX_KEYS });
      const retryAfter = Number(refused.headers.get('retry-after'));
      // The oldest record expires 24 h after its answer.
      expect(retryAfter).toBeGreaterThan(DAY_MS / 1000 - 60);
      expect(retryAfter).toBeLessThanOrEqual(DAY_MS / 1000);

      expectReplayOf(await send(capped, keys[0], 'capped 0'), created[0]!);
      expect((await send(capped, undefined, 'without a key')).status).toBe(201);
      expect((await send(other, randomUUID(), 'another application')).status).toBe(201);

      // Once the oldest record has expired (here: removed as its TTL would), a new key is taken again.
      await redis.del(record(capped.applicationId, keys[0]!));
      const index = stack.gateway.get(IdempotencyStore).recordKey(capped.applicationId, keys[0]!).index;
      await redis.zadd(index, 1, record(capped.applicationId, keys[0]!));
      expect((await send(capped, randomUUID(), 'after the oldest expired')).status).toBe(201);
      expectError(await send(capped, randomUUID(), 'full again'), 429, 'RateLimitExceeded', { policy: 'idempotency-keys', limit: MAX_KEYS });
    });
  });
});
