import { connect, headers as natsHeaders, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { type ListShipmentsRequest, Subjects } from '@tracking/contracts';
import { BARE_JSON, NatsRpcClient, REPLY_FORMAT_HEADER } from '@tracking/messaging';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { expectError, expectInvalidParameter, TIMESTAMP_MS, UUID, UUID_V7 } from '../support/http-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';

const SHIPMENT_FIELDS = [
  'id',
  'name',
  'reference',
  'status',
  'mode',
  'carrier',
  'originId',
  'destinationId',
  'plannedDepartureAt',
  'plannedArrivalAt',
  'departedAt',
  'deliveredAt',
  'completedAt',
  'cancelledAt',
  'tags',
  'metadata',
  'createdAt',
  'updatedAt',
  'autoTransitions',
  'conditions',
  'excursions',
  'lastPosition',
  'eta',
].sort();

const STRONG_ETAG = /^"[^"]+"$/;

describe('shipments over HTTP', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let otherTenant: TestTenant;
  let shipmentsPath: string;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack, { accounts: 2 });
    otherTenant = await createTenant(stack);
    shipmentsPath = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
  });
  afterAll(() => stack?.stop());

  const post = (body: unknown, headers?: Record<string, string>) =>
    stack.request('POST', shipmentsPath, { token: tenant.token, body, headers });
  const postRaw = (rawBody: string | Buffer, headers?: Record<string, string>) =>
    stack.request('POST', shipmentsPath, { token: tenant.token, rawBody, headers });
  const patch = (id: string, body: unknown, headers?: Record<string, string>) =>
    stack.request('PATCH', `${shipmentsPath}/${id}`, { token: tenant.token, body, headers });

  describe('POST /shipments', () => {
    it('answers 201 with the whole new shipment, its Location and its ETag', async () => {
      const before = Date.now();
      const created = await post({ name: 'Rotterdam to Lyon' });
      const after = Date.now();

      expect(created.status, created.text).toBe(201);
      const shipment = created.body;
      expect(Object.keys(shipment).sort()).toEqual(SHIPMENT_FIELDS);
      expect(shipment).toMatchObject({
        name: 'Rotterdam to Lyon',
        status: 'Planned',
        reference: null,
        mode: null,
        carrier: null,
        originId: null,
        destinationId: null,
        plannedDepartureAt: null,
        plannedArrivalAt: null,
        departedAt: null,
        deliveredAt: null,
        completedAt: null,
        cancelledAt: null,
        tags: [],
        metadata: {},
      });
      expect(shipment.id).toMatch(UUID_V7);
      expect(shipment.createdAt).toMatch(TIMESTAMP_MS);
      expect(shipment.updatedAt).toBe(shipment.createdAt);
      const createdAt = Date.parse(shipment.createdAt);
      expect(createdAt).toBeGreaterThanOrEqual(before - 1000);
      expect(createdAt).toBeLessThanOrEqual(after + 1000);
      expect(created.headers.get('location')).toBe(`${shipmentsPath}/${shipment.id}`);
      expect(created.headers.get('etag')).toMatch(STRONG_ETAG);
      expect(created.headers.get('content-type')).toMatch(/^application\/json/);

      const fetched = await stack.request('GET', created.headers.get('location')!, { token: tenant.token });
      expect(fetched.status).toBe(200);
      expect(fetched.body).toEqual(shipment);
    });

    it.each([
      ['missing name', {}, 'name', 'Required'],
      ['name null', { name: null }, 'name', 'InvalidFormat'],
      ['name a number', { name: 42 }, 'name', 'InvalidFormat'],
      ['name an object', { name: { first: 'x' } }, 'name', 'InvalidFormat'],
      ['name empty', { name: '' }, 'name', 'OutOfRange'],
      ['name of 201 characters', { name: 'x'.repeat(201) }, 'name', 'OutOfRange'],
      ['an unknown field', { name: 'ok', colour: 'red' }, 'colour', 'UnknownField'],
      ['id', { name: 'ok', id: '0190a4a0-0000-7000-8000-000000000000' }, 'id', 'ReadOnly'],
      ['status', { name: 'ok', status: 'InTransit' }, 'status', 'ReadOnly'],
      ['createdAt', { name: 'ok', createdAt: '2025-01-01T00:00:00.000Z' }, 'createdAt', 'ReadOnly'],
    ])('rejects %s with 400 InvalidParameter', async (_case, body, field, issue) => {
      expectInvalidParameter(await post(body), field, issue);
    });

    it('accepts names of 1 and 200 characters', async () => {
      expect((await post({ name: 'x' })).status).toBe(201);
      const long = await post({ name: 'y'.repeat(200) });
      expect(long.status).toBe(201);
      expect(long.body.name).toBe('y'.repeat(200));
    });

    it('rejects unparseable JSON with 400 MalformedRequest', async () => {
      expectError(await postRaw('{"name": "unterminated', { 'content-type': 'application/json' }), 400, 'MalformedRequest');
    });

    it.each([
      ['an array', '[{"name":"x"}]'],
      ['a string', '"x"'],
      ['null', 'null'],
      ['a number', '7'],
    ])('rejects a JSON body that is %s with 400 MalformedRequest', async (_case, rawBody) => {
      expectError(await postRaw(rawBody, { 'content-type': 'application/json' }), 400, 'MalformedRequest');
    });

    it('rejects a JSON content type without a body with 400 MalformedRequest', async () => {
      expectError(await postRaw('', { 'content-type': 'application/json' }), 400, 'MalformedRequest');
    });

    it('rejects text/plain with 415 UnsupportedMediaType', async () => {
      expectError(await postRaw('{"name":"x"}', { 'content-type': 'text/plain' }), 415, 'UnsupportedMediaType');
    });

    it('rejects a body without a content type with 415 UnsupportedMediaType', async () => {
      // A Buffer body makes fetch send no Content-Type at all (a string would be sent as text/plain).
      const response = await postRaw(Buffer.from('{"name":"x"}'));
      expectError(response, 415, 'UnsupportedMediaType');
    });

    it('rejects a body over 1 MiB with 413 PayloadTooLarge', async () => {
      const response = await post({ name: 'x'.repeat(1024 * 1024) });
      expectError(response, 413, 'PayloadTooLarge');
    });

    it('accepts a body just under 1 MiB as far as the size goes', async () => {
      // Same request, small enough: now the name rule answers, so 413 above is about size alone.
      const response = await post({ name: 'x'.repeat(1024 * 1024 - 100) });
      expectInvalidParameter(response, 'name', 'OutOfRange');
    });
  });

  describe('GET /shipments/{id}', () => {
    it('answers 200 with the shipment and its ETag', async () => {
      const created = await post({ name: 'To fetch' });
      const fetched = await stack.request('GET', `${shipmentsPath}/${created.body.id}`, { token: tenant.token });
      expect(fetched.status).toBe(200);
      expect(fetched.body).toEqual(created.body);
      expect(fetched.headers.get('etag')).toBe(created.headers.get('etag'));
    });

    it('accepts the id in upper case', async () => {
      const created = await createShipment(stack, tenant);
      const fetched = await stack.request('GET', `${shipmentsPath}/${created.id.toUpperCase()}`, { token: tenant.token });
      expect(fetched.status).toBe(200);
      expect(fetched.body.id).toBe(created.id);
    });
  });

  describe('PATCH /shipments/{id}', () => {
    it('changes the name and answers 200 with a new ETag', async () => {
      const created = await post({ name: 'Old name' });
      const changed = await patch(created.body.id, { name: 'New name' });
      expect(changed.status, changed.text).toBe(200);
      expect(changed.body).toMatchObject({ id: created.body.id, name: 'New name', status: 'Planned', createdAt: created.body.createdAt });
      expect(changed.body.updatedAt).toMatch(TIMESTAMP_MS);
      expect(Date.parse(changed.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.body.updatedAt));
      expect(changed.headers.get('etag')).toMatch(STRONG_ETAG);
      expect(changed.headers.get('etag')).not.toBe(created.headers.get('etag'));

      const fetched = await stack.request('GET', `${shipmentsPath}/${created.body.id}`, { token: tenant.token });
      expect(fetched.body).toEqual(changed.body);
      expect(fetched.headers.get('etag')).toBe(changed.headers.get('etag'));
    });

    it('honours If-Match: stale -> 412, current -> 200, * -> 200', async () => {
      const created = await post({ name: 'Versioned' });
      const firstTag = created.headers.get('etag')!;
      const second = await patch(created.body.id, { name: 'Second' }, { 'if-match': firstTag });
      expect(second.status).toBe(200);
      const secondTag = second.headers.get('etag')!;

      const stale = await patch(created.body.id, { name: 'Lost update' }, { 'if-match': firstTag });
      expectError(stale, 412, 'PreconditionFailed');
      const unchanged = await stack.request('GET', `${shipmentsPath}/${created.body.id}`, { token: tenant.token });
      expect(unchanged.body.name).toBe('Second');
      expect(unchanged.headers.get('etag')).toBe(secondTag);

      const current = await patch(created.body.id, { name: 'Third' }, { 'if-match': secondTag });
      expect(current.status).toBe(200);
      expect(current.body.name).toBe('Third');

      const any = await patch(created.body.id, { name: 'Fourth' }, { 'if-match': '*' });
      expect(any.status).toBe(200);
      expect(any.body.name).toBe('Fourth');
      expect(any.headers.get('etag')).not.toBe(current.headers.get('etag'));
    });

    it('fails an If-Match that names no version of ours with 412', async () => {
      const created = await createShipment(stack, tenant);
      expectError(await patch(created.id, { name: 'x' }, { 'if-match': '"not-a-version"' }), 412, 'PreconditionFailed');
    });

    it.each([
      ['name a number', { name: 1 }, 'name', 'InvalidFormat'],
      ['name null', { name: null }, 'name', 'InvalidFormat'],
      ['name empty', { name: '' }, 'name', 'OutOfRange'],
      ['name of 201 characters', { name: 'x'.repeat(201) }, 'name', 'OutOfRange'],
      ['an unknown field', { nickname: 'x' }, 'nickname', 'UnknownField'],
      ['id', { id: '0190a4a0-0000-7000-8000-000000000000' }, 'id', 'ReadOnly'],
      ['status', { status: 'Delivered' }, 'status', 'ReadOnly'],
      ['createdAt', { createdAt: '2025-01-01T00:00:00.000Z' }, 'createdAt', 'ReadOnly'],
    ])('rejects %s with 400 InvalidParameter', async (_case, body, field, issue) => {
      const created = await createShipment(stack, tenant, { name: 'Stays' });
      expectInvalidParameter(await patch(created.id, body), field, issue);
      const fetched = await stack.request('GET', `${shipmentsPath}/${created.id}`, { token: tenant.token });
      expect(fetched.body).toEqual(created);
    });

    it('rejects a JSON array body with 400 MalformedRequest', async () => {
      const created = await createShipment(stack, tenant);
      const response = await stack.request('PATCH', `${shipmentsPath}/${created.id}`, {
        token: tenant.token,
        rawBody: '[]',
        headers: { 'content-type': 'application/json' },
      });
      expectError(response, 400, 'MalformedRequest');
    });
  });

  describe('shipments that are not there', () => {
    const notFound = (response: HttpResult, secret?: string) => {
      expectError(response, 404, 'ShipmentNotExists');
      if (secret !== undefined) expect(response.text).not.toContain(secret);
    };

    it('answers 404 ShipmentNotExists for an unknown id', async () => {
      const unknown = '0190a4a0-0000-7000-8000-000000000000';
      notFound(await stack.request('GET', `${shipmentsPath}/${unknown}`, { token: tenant.token }));
      notFound(await patch(unknown, { name: 'x' }));
    });

    it.each(['not-a-uuid', '12345', '0190a4a0-0000-7000-8000-00000000000g'])(
      'answers 404 ShipmentNotExists for the id %s',
      async (id) => {
        notFound(await stack.request('GET', `${shipmentsPath}/${id}`, { token: tenant.token }));
        notFound(await patch(id, { name: 'x' }));
      },
    );

    it("answers 404 for another account's shipment of the same tenant, and never shows or changes it", async () => {
      const secret = `Other account ${Math.random()}`;
      const other = await createShipment(stack, tenant, { account: 1, name: secret });
      notFound(await stack.request('GET', `${shipmentsPath}/${other.id}`, { token: tenant.token }), secret);
      notFound(await patch(other.id, { name: 'Hijacked' }), secret);
      const list = await stack.request('GET', shipmentsPath, { token: tenant.token });
      expect(list.text).not.toContain(other.id);
      const untouched = await stack.request('GET', `/v1/accounts/${tenant.accountIds[1]}/shipments/${other.id}`, {
        token: tenant.token,
      });
      expect(untouched.body.name).toBe(secret);
    });

    it("answers 404 for another tenant's shipment, and never shows or changes it", async () => {
      const secret = `Other tenant ${Math.random()}`;
      const other = await createShipment(stack, otherTenant, { name: secret });
      notFound(await stack.request('GET', `${shipmentsPath}/${other.id}`, { token: tenant.token }), secret);
      notFound(await patch(other.id, { name: 'Hijacked' }, { 'if-match': '*' }), secret);
      const untouched = await stack.request('GET', `/v1/accounts/${otherTenant.accountIds[0]}/shipments/${other.id}`, {
        token: otherTenant.token,
      });
      expect(untouched.body.name).toBe(secret);
    });

    it('answers reads asked for at once, found or not, each as it would alone', async () => {
      // The OMS answers the reads of one turn with one statement (batchedRows).
      const own = await Promise.all([1, 2, 3].map((n) => createShipment(stack, tenant, { name: `Read at once ${n}` })));
      const otherAccount = await createShipment(stack, tenant, { account: 1, name: 'Read at once, other account' });
      const otherTenants = await createShipment(stack, otherTenant, { name: 'Read at once, other tenant' });
      const ids = [...own.map((shipment) => shipment.id), otherAccount.id, otherTenants.id, '0190a4a0-0000-7000-8000-000000000000', 'not-a-uuid'];
      const asks = [...ids, ...ids, ...ids];
      const read = (id: string) => stack.request('GET', `${shipmentsPath}/${id}`, { token: tenant.token });
      const alone: HttpResult[] = [];
      for (const id of asks) alone.push(await read(id));
      const together = await Promise.all(asks.map(read));
      // An error's id is the request's own.
      const answer = ({ status, body, headers }: HttpResult) => [status, body.error ? { ...body.error, id: undefined } : body, headers.get('etag')];
      expect(together.map(answer)).toEqual(alone.map(answer));
      expect(together.map((response) => response.status)).toEqual(asks.map((id) => (own.some((shipment) => shipment.id === id) ? 200 : 404)));
    });
  });

  describe('the edge', () => {
    it('answers 404 RouteNotFound for an unknown path', async () => {
      expectError(await stack.request('GET', '/v1/no-such-thing', { token: tenant.token }), 404, 'RouteNotFound');
      expectError(await stack.request('GET', `${shipmentsPath}/a/b`, { token: tenant.token }), 404, 'RouteNotFound');
      expectError(await stack.request('DELETE', '/v2/accounts', { token: tenant.token }), 404, 'RouteNotFound');
    });

    it('echoes a sane X-Request-Id', async () => {
      const id = 'client-req_42.a:b';
      const created = await post({ name: 'Traced' }, { 'x-request-id': id });
      expect(created.headers.get('x-request-id')).toBe(id);
      const failed = await post({}, { 'x-request-id': id });
      expect(failed.headers.get('x-request-id')).toBe(id);
      const missing = await stack.request('GET', '/v1/no-such-thing', { headers: { 'x-request-id': id } });
      expect(missing.headers.get('x-request-id')).toBe(id);
    });

    it.each([
      ['absent', undefined],
      ['with spaces', 'has spaces in it'],
      ['too long', 'a'.repeat(129)],
      ['with a newline escape', 'abc%0d%0aSet-Cookie'],
    ])('generates an X-Request-Id when the given one is %s', async (_case, given) => {
      const response = await stack.request('GET', shipmentsPath, {
        token: tenant.token,
        headers: given === undefined ? {} : { 'x-request-id': given },
      });
      expect(response.status).toBe(200);
      const id = response.headers.get('x-request-id');
      expect(id).toMatch(UUID);
      expect(id).not.toBe(given);
    });

    it('gives every request its own generated id', async () => {
      const [a, b] = await Promise.all([stack.request('GET', '/v1/nope'), stack.request('GET', '/v1/nope')]);
      expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
    });
  });
});

describe('shipments when the OMS fails', () => {
  const RPC_TIMEOUT_MS = 400;
  let stack: TestStack;
  let tenant: TestTenant;
  let nats: NatsConnection;
  let path: string;

  beforeAll(async () => {
    stack = await TestStack.start({ env: { RPC_TIMEOUT_MS: String(RPC_TIMEOUT_MS) } });
    tenant = await createTenant(stack);
    path = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
    nats = await connect({ servers: stack.env.NATS_URL ?? 'nats://127.0.0.1:4222', name: 'fake-oms' });
  });
  afterAll(async () => {
    await nats?.close();
    await stack?.stop();
  });
  afterEach(async () => {
    // Every test leaves no fake responder and one real replica running, as it found them.
    await nats.flush();
    if (stack.oms.length === 0) await stack.startOmsReplica();
  });

  /** 5xx bodies: the envelope without details, and nothing that names the inside of the system. */
  const expectOpaqueFailure = (response: HttpResult, status: number, code: string) => {
    expectError(response, status, code);
    const text = response.text.toLowerCase();
    for (const internal of [stack.env.NATS_SUBJECT_PREFIX!, Subjects.oms.shipments.list, 'oms.', 'nats', 'subject', 'stack', '.ts:', '.js:']) {
      expect(text).not.toContain(internal.toLowerCase());
    }
  };

  /** The headers of a bare JSON reply (`JsonReply`), which the gateway passes on without parsing. */
  const bareJsonHeaders = () => {
    const replyHeaders = natsHeaders();
    replyHeaders.set(REPLY_FORMAT_HEADER, BARE_JSON);
    return replyHeaders;
  };

  /** A fake OMS on the list subject; `answer` gives the raw reply, or undefined to stay silent. */
  const fakeOms = (answer: (request: Uint8Array) => string | undefined, replyHeaders?: MsgHdrs) =>
    nats.subscribe(`${stack.env.NATS_SUBJECT_PREFIX}${Subjects.oms.shipments.list}`, {
      queue: 'oms',
      callback: (_error, message) => {
        const reply = answer(message.data);
        if (reply !== undefined) message.respond(reply, replyHeaders && { headers: replyHeaders });
      },
    });

  it('answers 503 ServiceUnavailable with Retry-After when no OMS replica runs, and recovers', async () => {
    expect((await stack.request('GET', path, { token: tenant.token })).status).toBe(200);
    await stack.stopOmsReplicas();

    const down = await stack.request('GET', path, { token: tenant.token });
    expectOpaqueFailure(down, 503, 'ServiceUnavailable');
    expect(down.headers.get('retry-after')).toMatch(/^\d+$/);
    expectOpaqueFailure(await stack.request('POST', path, { token: tenant.token, body: { name: 'x' } }), 503, 'ServiceUnavailable');

    await stack.startOmsReplica();
    const up = await stack.request('POST', path, { token: tenant.token, body: { name: 'After restart' } });
    expect(up.status).toBe(201);
    expect((await stack.request('GET', `${path}/${up.body.id}`, { token: tenant.token })).status).toBe(200);
  });

  it('answers 504 GatewayTimeout when the OMS never answers', async () => {
    await stack.stopOmsReplicas();
    let received!: () => void;
    const requestArrived = new Promise<void>((resolve) => (received = resolve));
    const silent = fakeOms(() => {
      received();
      return undefined;
    });
    await nats.flush();
    try {
      const started = Date.now();
      const response = await stack.request('GET', path, { token: tenant.token });
      const elapsed = Date.now() - started;
      await requestArrived;
      expectOpaqueFailure(response, 504, 'GatewayTimeout');
      expect(elapsed).toBeGreaterThanOrEqual(RPC_TIMEOUT_MS - 50);
      expect(elapsed).toBeLessThan(RPC_TIMEOUT_MS + 3000);
    } finally {
      silent.unsubscribe();
    }
  });

  it.each<[string, () => string, MsgHdrs?]>([
    ['not JSON', () => 'this is not json <html>'],
    ['JSON without response or err', () => JSON.stringify({ id: 'x', isDisposed: true })],
    ['a JSON array', () => '[1,2,3]'],
    ['JSON null', () => 'null'],
    ['an err that is no error body', () => JSON.stringify({ id: 'x', err: 'oms.shipments.list exploded at Object.<anonymous>' })],
    ['an err with an unknown code', () => JSON.stringify({ id: 'x', err: { code: 'NotACode', message: 'oms.internal' } })],
    ['a bare JSON reply that holds no JSON object or array', () => 'oms.shipments.list exploded', bareJsonHeaders()],
  ])('answers 502 BadGateway when the OMS replies %s', async (_case, answer, replyHeaders) => {
    await stack.stopOmsReplicas();
    const garbage = fakeOms(answer, replyHeaders);
    await nats.flush();
    try {
      expectOpaqueFailure(await stack.request('GET', path, { token: tenant.token }), 502, 'BadGateway');
    } finally {
      garbage.unsubscribe();
    }
  });

  it('passes on the page of a service that answers inside a packet rather than as bare JSON', async () => {
    // A service of an older version, or one whose handler returns a plain object: the gateway asked for
    // bare JSON, gets a packet, and encodes its response itself.
    await stack.stopOmsReplicas();
    const page = { items: [{ id: 'x', name: 'In a packet \u2028 "quoted"' }], metadata: { nextCursor: null } };
    const packet = fakeOms(() => JSON.stringify({ id: 'x', response: page, isDisposed: true }));
    await nats.flush();
    try {
      const response = await stack.request('GET', path, { token: tenant.token });
      expect(response.status, response.text).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(response.body).toEqual(page);
    } finally {
      packet.unsubscribe();
    }
  });

  it('answers a caller that does not ask for bare JSON with the same page inside a packet', async () => {
    for (let i = 0; i < 3; i++) await createShipment(stack, tenant, { name: `Packet "${i}" \u00e9` });
    const overHttp = await stack.request('GET', `${path}?limit=2`, { token: tenant.token });
    expect(overHttp.status, overHttp.text).toBe(200);
    expect(overHttp.headers.get('content-type')).toBe('application/json; charset=utf-8');

    const rpc = new NatsRpcClient(nats, stack.env.NATS_SUBJECT_PREFIX!, 5000);
    const request = {
      tenantId: tenant.tenantId,
      accountId: tenant.accountIds[0]!,
      page: { limit: 2, includeTotal: false },
      filters: {},
    } satisfies ListShipmentsRequest;
    expect(await rpc.call(Subjects.oms.shipments.list, request)).toEqual(overHttp.body);
    expect(JSON.parse((await rpc.callJson(Subjects.oms.shipments.list, request)).toString('utf8'))).toEqual(overHttp.body);
  });

  it("passes a service's own typed error through unchanged", async () => {
    await stack.stopOmsReplicas();
    const typed = fakeOms(() =>
      JSON.stringify({ id: 'x', err: { code: 'InvalidParameter', message: 'No.', details: { field: 'limit', issue: 'OutOfRange' } } }),
    );
    await nats.flush();
    try {
      const response = await stack.request('GET', path, { token: tenant.token });
      expectInvalidParameter(response, 'limit', 'OutOfRange');
      expect(response.body.error.message).toBe('No.');
    } finally {
      typed.unsubscribe();
    }
  });
});
