import { randomUUID } from 'node:crypto';
import { ErrorCode } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { type AccountResources, createAccountResources, notFoundCode } from '../support/account-resources.js';
import { expectError, expectInvalidParameter } from '../support/http-assertions.js';
import { type CatalogRoute, fieldsOf, fillPath, RouteCatalog, type SchemaField, withField } from '../support/route-catalog.js';
import { type HttpResult, type RequestOptions, TestStack } from '../support/stack.js';

const JSON_TYPE = { 'content-type': 'application/json' };
const MIB = 1024 * 1024;

/**
 * Input no client should send, on every route that could receive it: each must be refused with a 4xx
 * in the envelope, quickly, and never reach PostgreSQL as something it cannot store (a 500). Body
 * rules run over every route with a JSON body, query rules over every collection, path rules over
 * every path id; the routes come from the running gateway.
 */
describe('hostile input', () => {
  let stack: TestStack;
  let catalog: RouteCatalog;
  let tenant: TestTenant;
  let own: AccountResources;

  beforeAll(async () => {
    stack = await TestStack.start();
    catalog = RouteCatalog.of(stack.gateway);
    tenant = await createTenant(stack);
    own = await createAccountResources(stack, tenant, 0, 'OWN');
  });
  afterAll(() => stack?.stop());

  const bodyRoutes = () => catalog.routes.filter((route) => route.bodySchema !== undefined);
  const collections = () => catalog.accountRoutes.filter((route) => route.method === 'GET' && route.queryParameters.includes('limit'));
  const pathOf = (route: CatalogRoute, values: AccountResources = own) => fillPath(route, values);
  const fieldsOfRoute = (route: CatalogRoute, test: (field: SchemaField) => boolean) => fieldsOf(catalog, route.bodySchema!).filter(test);
  /** Every field of the body, so that any of them can be spoiled. */
  const completeBody = (route: CatalogRoute) => catalog.exampleOf(route.bodySchema!, true);

  function send(route: CatalogRoute, options: RequestOptions, path = pathOf(route)): Promise<HttpResult> {
    return stack.request(route.method, path, { token: tenant.token, ...options });
  }

  function sendRaw(route: CatalogRoute, rawBody: string | Buffer, headers: Record<string, string> = JSON_TYPE): Promise<HttpResult> {
    return send(route, { rawBody, headers });
  }

  /** The response with how long it took. */
  async function timed(request: Promise<HttpResult>): Promise<HttpResult & { ms: number }> {
    const started = performance.now();
    const response = await request;
    return { ...response, ms: performance.now() - started };
  }

  it('finds the routes it probes', () => {
    expect(bodyRoutes().map((route) => route.key)).toEqual(
      expect.arrayContaining([
        'POST /v1/applications/token',
        'POST /v1/accounts/:accountId/shipments',
        'PATCH /v1/accounts/:accountId/devices/:deviceId',
        'POST /v1/accounts/:accountId/sets/bulk-assign',
      ]),
    );
    expect(collections().length).toBeGreaterThanOrEqual(8);
  });

  describe('bodies', () => {
    it('400 MalformedRequest for a body that is not JSON', async () => {
      for (const route of bodyRoutes()) {
        for (const raw of ['{"name":', "{'name':'x'}", '{"a":1,}', 'NaN', '{"a":NaN}', '\u0000', '\ufeff{}x']) {
          const response = await sendRaw(route, raw);
          expect.soft({ status: response.status, code: response.body?.error?.code }, `${route.key} ${JSON.stringify(raw)}`).toEqual({
            status: 400,
            code: ErrorCode.MalformedRequest,
          });
        }
      }
    });

    it('400 MalformedRequest for JSON that is not an object', async () => {
      for (const route of bodyRoutes()) {
        for (const raw of ['[]', '[{}]', '"text"', '42', '-1.5', 'null', 'true', '"\u0000"']) {
          const response = await sendRaw(route, raw);
          expect.soft({ status: response.status, code: response.body?.error?.code }, `${route.key} ${raw}`).toEqual({
            status: 400,
            code: ErrorCode.MalformedRequest,
          });
        }
      }
    });

    it('400 MalformedRequest, at once, for JSON nested 10000 and 200000 levels deep', async () => {
      const deepObject = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
      const deepArray = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
      for (const route of bodyRoutes()) {
        const field = fieldsOfRoute(route, () => true)[0]!.path.split('.')[0]!;
        // The token request reads at most 16 KiB: its deep bodies stay within that.
        const deeps =
          route.key === 'POST /v1/applications/token' ? [deepObject(2500), deepArray(8000)] : [deepObject(10000), deepArray(10000), deepArray(200000)];
        for (const deep of deeps) {
          const response = await timed(sendRaw(route, `{"${field}":${deep}}`));
          const context = `${route.key} ${field}: ${deep.length} bytes deep`;
          expect.soft({ status: response.status, code: response.body?.error?.code }, context).toEqual({
            status: 400,
            code: ErrorCode.MalformedRequest,
          });
          expect.soft(response.ms, context).toBeLessThan(2000);
        }
      }
      // Still serving.
      expect((await stack.request('GET', `/v1/accounts/${own.accountId}/shipments`, { token: tenant.token })).status).toBe(200);
    });

    it('accepts 32 levels of nesting, the body counting as one, but not 33', async () => {
      const route = catalog.routes.find((candidate) => candidate.key === 'POST /v1/accounts/:accountId/shipments')!;
      // The body is level 1 and `metadata` level 2: `levels` objects from `metadata` down reach levels + 1.
      const nested = (levels: number) => `{"name":"deep","metadata":${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}}`;
      // At 32 levels metadata's own rule (flat values) answers: the depth was accepted.
      expectInvalidParameter(await sendRaw(route, nested(31)), 'metadata', 'InvalidFormat');
      expectError(await sendRaw(route, nested(32)), 400, 'MalformedRequest');
    });

    it('400 InvalidFormat naming the field for a NUL character or an unpaired surrogate in any string field', async () => {
      let probes = 0;
      for (const route of bodyRoutes()) {
        for (const { path } of fieldsOfRoute(route, ({ schema }) => schema.type === 'string')) {
          for (const text of ['nul\u0000inside', '\u0000', 'lone \ud800 high', 'lone \udc00 low']) {
            const response = await send(route, { body: withField(completeBody(route), path, text) });
            expect.soft(invalidParameterOf(response), `${route.key} ${path}=${JSON.stringify(text)}: ${response.text}`).toEqual({
              field: path,
              issue: 'InvalidFormat',
            });
            probes++;
          }
        }
      }
      expect(probes).toBeGreaterThan(100);
    });

    it('400 InvalidFormat on the object for a NUL character in a key of metadata', async () => {
      for (const route of bodyRoutes()) {
        for (const { path } of fieldsOfRoute(route, ({ path: name }) => name === 'metadata')) {
          const response = await send(route, { body: withField(completeBody(route), path, { 'key\u0000': 'value' }) });
          expect.soft(invalidParameterOf(response), `${route.key}: ${response.text}`).toEqual({ field: path, issue: 'InvalidFormat' });
        }
      }
    });

    it('keeps emoji and other characters outside the BMP (surrogate pairs) intact', async () => {
      const path = `/v1/accounts/${own.accountId}/shipments`;
      const created = await stack.request('POST', path, { token: tenant.token, body: { name: 'crate 📦 𝄞', tags: ['🚚'] } });
      expect(created.status, created.text).toBe(201);
      const read = await stack.request('GET', `${path}/${created.body.id}`, { token: tenant.token });
      expect(read.body).toMatchObject({ name: 'crate 📦 𝄞', tags: ['🚚'] });
    });

    it('400 InvalidParameter naming the field for numbers beyond what the field holds, in every number field', async () => {
      let probes = 0;
      for (const route of bodyRoutes()) {
        for (const { path } of fieldsOfRoute(route, ({ schema }) => schema.type === 'integer' || schema.type === 'number')) {
          const body = JSON.stringify(withField(completeBody(route), path, '__NUMBER__'));
          for (const number of ['9007199254740993', '-9007199254740993', '1e308', '-1e308', '1e400', '"NaN"', '"Infinity"', '"12"']) {
            const response = await sendRaw(route, body.replace('"__NUMBER__"', number));
            const detail = invalidParameterOf(response) as { field?: string; issue?: string };
            expect.soft(detail?.field, `${route.key} ${path}=${number}: ${response.text}`).toBe(path);
            expect.soft(['OutOfRange', 'InvalidFormat'], `${route.key} ${path}=${number}`).toContain(detail?.issue);
            probes++;
          }
        }
      }
      expect(probes).toBeGreaterThan(20);
    });

    it('keeps a metadata number as the nearest double; beyond 2^53 send it as a string', async () => {
      const response = await stack.request('POST', `/v1/accounts/${own.accountId}/shipments`, {
        token: tenant.token,
        rawBody: '{"name":"big","metadata":{"big":9007199254740993,"exact":"9007199254740993"}}',
        headers: JSON_TYPE,
      });
      expect(response.status, response.text).toBe(201);
      expect(response.body.metadata).toEqual({ big: 9007199254740992, exact: '9007199254740993' });
    });

    it('400 InvalidFormat naming the field for an array where an object belongs, and the other way round', async () => {
      let probes = 0;
      for (const route of bodyRoutes()) {
        for (const { path, schema } of fieldsOfRoute(route, ({ schema }) => schema.type === 'object' || schema.type === 'array')) {
          for (const wrong of schema.type === 'object' ? [[], [{}], 'text', 7] : [{}, { 0: 'a' }, 'text', 7]) {
            const response = await send(route, { body: withField(completeBody(route), path, wrong) });
            expect.soft(invalidParameterOf(response), `${route.key} ${path}=${JSON.stringify(wrong)}: ${response.text}`).toEqual({
              field: path,
              issue: 'InvalidFormat',
            });
            probes++;
          }
        }
      }
      expect(probes).toBeGreaterThan(20);
    });

    it('400 OutOfRange, without a slow walk, for arrays longer than their field allows, up to what fits the body limit', async () => {
      let probes = 0;
      for (const route of bodyRoutes()) {
        for (const { path, schema } of fieldsOfRoute(route, ({ schema }) => schema.type === 'array' && schema.maxItems !== undefined)) {
          const limit = bodyLimitOf(route);
          const entry = (index: number) => {
            const example = catalog.exampleOf(schema.items!);
            // Distinct entries: the worst case of a uniqueness rule that compares each with all the others.
            return typeof example === 'string' && catalog.resolve(schema.items!).format !== 'uuid' ? `t${index}` : catalog.exampleOf(schema.items!);
          };
          const fitting = Math.floor((limit - 1000) / (JSON.stringify(entry(999999)).length + 1));
          for (const count of [schema.maxItems! + 1, fitting]) {
            const body = JSON.stringify(withField(catalog.exampleOf(route.bodySchema!), path, Array.from({ length: count }, (_, i) => entry(i))));
            expect(Buffer.byteLength(body)).toBeLessThan(limit);
            const response = await timed(sendRaw(route, body));
            const context = `${route.key} ${path} with ${count} entries: ${response.text.slice(0, 300)}`;
            expect.soft(invalidParameterOf(response), context).toEqual({ field: path, issue: 'OutOfRange' });
            expect.soft(response.ms, context).toBeLessThan(3000);
            probes++;
          }
        }
      }
      expect(probes).toBeGreaterThanOrEqual(6);
    });

    it('413 PayloadTooLarge for a body just over the limit: 1 MiB, 4 MiB for bulk requests, 16 KiB for the token request', async () => {
      for (const route of bodyRoutes()) {
        const limit = bodyLimitOf(route);
        const over = await sendRaw(route, `{"x":"${'a'.repeat(limit - 7)}"}`);
        expectError(over, 413, 'PayloadTooLarge');
        // One byte less is read (and then refused for what it says, not for its size).
        const at = await sendRaw(route, `{"x":"${'a'.repeat(limit - 8)}"}`);
        expect.soft(at.status, `${route.key} at the limit: ${at.text.slice(0, 200)}`).toBe(400);
      }
    });

    it('415 UnsupportedMediaType for anything but application/json', async () => {
      const types = [
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/xml',
        'application/jsonx',
        'json',
        '',
      ];
      for (const route of bodyRoutes()) {
        for (const type of types) {
          // A Buffer body makes fetch send no Content-Type at all (a string would be text/plain).
          const response = type === '' ? await sendRaw(route, Buffer.from('{}'), {}) : await sendRaw(route, '{}', { 'content-type': type });
          expect.soft({ status: response.status, code: response.body?.error?.code }, `${route.key} Content-Type ${JSON.stringify(type)}`).toEqual({
            status: 415,
            code: ErrorCode.UnsupportedMediaType,
          });
        }
      }
    });

    it('takes the last of duplicate keys, as JSON.parse does', async () => {
      const response = await stack.request('POST', `/v1/accounts/${own.accountId}/shipments`, {
        token: tenant.token,
        rawBody: '{"name":"first","name":"second","tags":["a"],"tags":["b"]}',
        headers: JSON_TYPE,
      });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toMatchObject({ name: 'second', tags: ['b'] });
    });

    it('400 UnknownField naming the key for __proto__ and constructor anywhere, and pollutes nothing', async () => {
      const poison = (key: string) => (key === '__proto__' ? '{"polluted":"yes","name":"from the prototype"}' : '{"prototype":{"polluted":"yes"}}');
      let probes = 0;
      for (const route of bodyRoutes()) {
        const objects = ['', ...fieldsOfRoute(route, ({ schema }) => schema.type === 'object').map(({ path }) => path)];
        for (const key of ['__proto__', 'constructor']) {
          for (const path of objects) {
            // Spliced in as text: JSON.stringify of an object cannot produce an own `__proto__` key.
            const body = JSON.stringify(path ? withField(completeBody(route), path, { __marker__: 1 }) : completeBody(route));
            const raw = path ? body.replace('"__marker__":1', `"${key}":${poison(key)}`) : body.replace(/^\{/, `{"${key}":${poison(key)},`);
            const response = await sendRaw(route, raw);
            const field = path ? `${path}.${key}` : key;
            expect.soft(invalidParameterOf(response), `${route.key} ${field}: ${response.text}`).toEqual({ field, issue: 'UnknownField' });
            probes++;
          }
        }
      }
      expect(probes).toBeGreaterThan(30);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.prototype).not.toHaveProperty('polluted');
    });

    it('400 InvalidFormat for a name or identifier of only blank or invisible characters, on create and PATCH', async () => {
      const accounts = '/v1/accounts/:accountId';
      const fields: [string, string][] = [
        [`POST ${accounts}/shipments`, 'name'],
        [`PATCH ${accounts}/shipments/:shipmentId`, 'name'],
        [`POST ${accounts}/shipments/:shipmentId/sets`, 'name'],
        [`PATCH ${accounts}/shipments/:shipmentId/sets/:setId`, 'name'],
        [`POST ${accounts}/shipments/:shipmentId/sets/:setId/items`, 'sku'],
        [`PATCH ${accounts}/shipments/:shipmentId/sets/:setId/items/:itemId`, 'sku'],
        [`POST ${accounts}/points-of-interest`, 'name'],
        [`PATCH ${accounts}/points-of-interest/:poiId`, 'name'],
        [`POST ${accounts}/devices`, 'serialNumber'],
        [`POST ${accounts}/devices`, 'model'],
        [`PATCH ${accounts}/devices/:deviceId`, 'model'],
      ];
      const blanks = ['   ', '\u200b', '\u200b\u200c', '\ufeff', '\u0001\u0007', '\t\n', '\u00a0\u3000', '\u2060\u3164'];
      for (const [key, field] of fields) {
        const route = catalog.routes.find((candidate) => candidate.key === key)!;
        expect(route, key).toBeDefined();
        for (const blank of blanks) {
          const body = route.method === 'PATCH' ? { [field]: blank } : { ...(catalog.exampleOf(route.bodySchema!) as object), [field]: blank };
          const response = await send(route, { body });
          expect.soft(invalidParameterOf(response), `${key} ${field}=${JSON.stringify(blank)}: ${response.text}`).toEqual({ field, issue: 'InvalidFormat' });
        }
      }
      // The empty string is still a length to fix, and one visible character among invisible ones is a name.
      const shipments = catalog.routes.find((route) => route.key === `POST ${accounts}/shipments`)!;
      expect(invalidParameterOf(await send(shipments, { body: { name: '' } }))).toEqual({ field: 'name', issue: 'OutOfRange' });
      const named = await send(shipments, { body: { name: '\u200b·\u200b' } });
      expect(named.status, named.text).toBe(201);
    });

    it('400 UnknownField naming the field for a body on every route that takes none, after the account checks', async () => {
      const routes = catalog.accountRoutes.filter((route) => route.method !== 'GET' && route.bodySchema === undefined);
      expect(routes.map((route) => route.key)).toEqual(
        expect.arrayContaining([
          'POST /v1/accounts/:accountId/shipments/:shipmentId/complete',
          'DELETE /v1/accounts/:accountId/shipments/:shipmentId',
          'PUT /v1/accounts/:accountId/shipments/:shipmentId/sets/:setId/devices/:deviceId',
          'POST /v1/accounts/:accountId/operations/:operationId/cancel',
        ]),
      );
      for (const route of routes) {
        const response = await send(route, { body: { x: 1, force: true } });
        expect.soft(invalidParameterOf(response), `${route.key}: ${response.text}`).toEqual({ field: 'x', issue: 'UnknownField' });
        for (const raw of ['[]', 'null', '"x"']) {
          const malformed = await sendRaw(route, raw);
          expect.soft({ route: route.key, raw, status: malformed.status, code: malformed.body?.error?.code }).toEqual({
            route: route.key,
            raw,
            status: 400,
            code: ErrorCode.MalformedRequest,
          });
        }
      }
      // Nothing was done: the resources the refused requests named are all still there.
      for (const [kind, path] of Object.entries({
        item: `shipments/${own.shipmentId}/sets/${own.setId}/items/${own.itemId}`,
        pointOfInterest: `points-of-interest/${own.poiId}`,
        device: `devices/${own.deviceId}`,
      })) {
        const response = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/${path}`, { token: tenant.token });
        expect({ kind, status: response.status }).toEqual({ kind, status: 200 });
      }
      // Without a token the 401 comes first.
      const complete = routes.find((route) => route.key.endsWith('/complete'))!;
      expect((await stack.request('POST', pathOf(complete), { body: { x: 1 } })).status).toBe(401);
    });
  });

  describe('query strings', () => {
    it.each([
      ['limit=1e3', 'limit', 'InvalidFormat'],
      ['limit=10.0', 'limit', 'InvalidFormat'],
      ['limit=0x10', 'limit', 'InvalidFormat'],
      ['limit=', 'limit', 'InvalidFormat'],
      ['limit=%20', 'limit', 'InvalidFormat'],
      ['limit=-1', 'limit', 'OutOfRange'],
      ['limit=101', 'limit', 'OutOfRange'],
      ['limit=99999999999999999999999', 'limit', 'OutOfRange'],
      ['limit=1&limit=2', 'limit', 'InvalidFormat'],
      ['includeTotal=1', 'includeTotal', 'InvalidFormat'],
      ['includeTotal=true&includeTotal=true', 'includeTotal', 'InvalidFormat'],
      ['offset=10', 'offset', 'UnknownField'],
      ['Limit=5', 'Limit', 'UnknownField'],
      ['limit[]=5', 'limit[]', 'UnknownField'],
      ['__proto__=1', '__proto__', 'UnknownField'],
      ['cursor=', 'cursor', 'InvalidCursor'],
      ['cursor=garbage', 'cursor', 'InvalidCursor'],
      ['cursor=a.b', 'cursor', 'InvalidCursor'],
      ['cursor=%00', 'cursor', 'InvalidCursor'],
      ['cursor=..%2F..%2F', 'cursor', 'InvalidCursor'],
      [`cursor=${'A'.repeat(600)}`, 'cursor', 'InvalidCursor'],
      ['cursor=x&cursor=y', 'cursor', 'InvalidFormat'],
    ])('?%s: 400 %s %s on every collection', async (query, field, issue) => {
      for (const route of collections()) {
        const response = await stack.request('GET', `${pathOf(route)}?${query}`, { token: tenant.token });
        expect.soft(invalidParameterOf(response), `${route.key}?${query}: ${response.text}`).toEqual({ field, issue });
      }
    });

    it('refuses a cursor of another collection, and a forged one', async () => {
      await createShipment(stack, tenant);
      await createShipment(stack, tenant);
      const shipments = await stack.request('GET', `/v1/accounts/${own.accountId}/shipments?limit=1`, { token: tenant.token });
      const cursor = shipments.body.metadata.nextCursor as string;
      expect(cursor).toEqual(expect.any(String));
      const [payload, signature] = cursor.split('.');
      const forged = `${Buffer.from(`${Buffer.from(payload!, 'base64url').toString()}0`).toString('base64url')}.${signature}`;
      for (const route of collections().filter((candidate) => !candidate.path.endsWith('/shipments'))) {
        const response = await stack.request('GET', `${pathOf(route)}?cursor=${cursor}`, { token: tenant.token });
        expect.soft(invalidParameterOf(response), route.key).toEqual({ field: 'cursor', issue: 'InvalidCursor' });
      }
      const response = await stack.request('GET', `/v1/accounts/${own.accountId}/shipments?cursor=${forged}`, { token: tenant.token });
      expectInvalidParameter(response, 'cursor', 'InvalidCursor');
    });

    // An unpaired surrogate cannot be written in a URL: percent-encoding is UTF-8, and a decoder
    // turns an encoded surrogate into U+FFFD, which is ordinary text.
    it('400 InvalidFormat for a NUL character in any filter', async () => {
      let probes = 0;
      for (const route of collections()) {
        for (const name of route.queryParameters.filter((parameter) => !['limit', 'cursor', 'includeTotal'].includes(parameter))) {
          for (const value of ['a%00b', '%00']) {
            const response = await stack.request('GET', `${pathOf(route)}?${name}=${value}`, { token: tenant.token });
            const context = `${route.key}?${name}=${value}: ${response.text}`;
            expect.soft(invalidParameterOf(response), context).toEqual({ field: name, issue: 'InvalidFormat' });
            probes++;
          }
        }
      }
      expect(probes).toBeGreaterThanOrEqual(10);
    });

    it('400 UnknownField for a query parameter on every route that takes none, after the account checks', async () => {
      const jwks = 'GET /v1/.well-known/jwks.json';
      const routes = catalog.routes.filter((route) => route.documented && route.queryParameters.length === 0 && route.key !== jwks);
      expect(routes.length).toBeGreaterThan(20);
      for (const route of routes) {
        const path = route.params.length ? pathOf(route) : route.path;
        const response = await send(route, route.bodySchema ? { body: catalog.exampleOf(route.bodySchema) } : {}, `${path}?dryRun=true`);
        expect.soft(invalidParameterOf(response), `${route.key}?dryRun=true: ${response.text}`).toEqual({ field: 'dryRun', issue: 'UnknownField' });
      }
      // Without a token the 401 comes first.
      const route = routes.find((candidate) => candidate.key === 'GET /v1/accounts/:accountId/shipments/:shipmentId')!;
      expect((await stack.request('GET', `${pathOf(route)}?dryRun=true`)).status).toBe(401);
      // The JWKS is fetched by libraries and caches that may add a query of their own.
      expect((await stack.request('GET', '/v1/.well-known/jwks.json?v=2')).status).toBe(200);
    });

    it('checks the Idempotency-Key on every authenticated POST route', async () => {
      const routes = catalog.accountRoutes.filter((route) => route.documented && route.method === 'POST');
      expect(routes.length).toBeGreaterThan(10);
      for (const route of routes) {
        const body = route.bodySchema ? { body: catalog.exampleOf(route.bodySchema) } : {};
        const response = await send(route, { ...body, headers: { 'idempotency-key': 'k'.repeat(256) } });
        expect.soft(invalidParameterOf(response), `${route.key}: ${response.text}`).toEqual({ field: 'Idempotency-Key', issue: 'OutOfRange' });
      }
    });
  });

  describe('path ids', () => {
    const garbage = [
      '..%2F..%2Fetc%2Fpasswd',
      '..%5C..%5Cwindows',
      'x'.repeat(5000),
      '%E2%9C%93%F0%9F%93%A6',
      "1'%20OR%20'1'%3D'1",
      '%00',
      '-1',
      'null',
      '01a2021eba50700d9337479721bb636d',
      `%7B${randomUUID()}%7D`,
      `${randomUUID()}%20`,
    ];

    it("the resource's own 404 for an id that is not a UUID, in every path id of every route", async () => {
      let probes = 0;
      for (const route of catalog.accountRoutes) {
        for (const param of route.params.filter((name) => name !== 'accountId')) {
          for (const id of garbage) {
            // Spliced in after filling, so that the id reaches the server exactly as written here.
            const path = pathOf(route, { ...own, [param]: '__ID__' }).replace('__ID__', id);
            const response = await send(route, route.bodySchema ? { body: catalog.exampleOf(route.bodySchema) } : {}, path);
            const context = `${route.method} ${path.slice(0, 200)}: ${response.text.slice(0, 200)}`;
            expect.soft({ status: response.status, code: response.body?.error?.code }, context).toEqual({
              status: 404,
              code: notFoundCode(route, param),
            });
            probes++;
          }
        }
      }
      expect(probes).toBeGreaterThan(300);
    });

    it('400 AccountNotFound for an account id that is not a UUID, on every route', async () => {
      for (const route of catalog.accountRoutes) {
        for (const id of garbage) {
          const path = pathOf(route, { ...own, accountId: '__ID__' }).replace('__ID__', id);
          const response = await send(route, route.bodySchema ? { body: catalog.exampleOf(route.bodySchema) } : {}, path);
          const context = `${route.method} ${path.slice(0, 200)}`;
          expect.soft(invalidParameterOf(response), context).toEqual({ field: 'accountId', issue: 'AccountNotFound' });
        }
      }
    });

    it('400 MalformedRequest, in the envelope with X-Request-Id, for a path that is not valid percent-encoding', async () => {
      for (const tail of ['%FF', '%', '%E2%9C', '%zz']) {
        const response = await stack.request('GET', `/v1/accounts/${own.accountId}/shipments/${tail}`, {
          token: tenant.token,
          headers: { 'x-request-id': 'bad-url-1' },
        });
        expectError(response, 400, 'MalformedRequest');
        expect(response.headers.get('x-request-id')).toBe('bad-url-1');
      }
    });

    it('404 RouteNotFound in the envelope for paths that climb out of a route', async () => {
      for (const path of ['/v1/accounts/../../etc/passwd', `/v1/accounts/${own.accountId}/shipments/..`, '/v1/%2E%2E/%2E%2E/etc/passwd']) {
        expectError(await stack.request('GET', path, { token: tenant.token }), 404, 'RouteNotFound');
      }
    });
  });
});

/** The body limit of a route: 16 KiB for the token request, 4 MiB for bulk requests and reading batches, else 1 MiB. */
function bodyLimitOf(route: CatalogRoute): number {
  if (route.key === 'POST /v1/applications/token') return 16 * 1024;
  return route.path.includes('/bulk-') || route.key === 'POST /v1/accounts/:accountId/readings' ? 4 * MIB : MIB;
}

/**
 * `details` of a 400 InvalidParameter in the envelope, else the status and body for the failure message.
 * A reading batch judges its entries one by one: a 200 that stored nothing and rejected the one entry
 * with InvalidParameter stands for the 400 of other routes.
 */
function invalidParameterOf(response: HttpResult): unknown {
  const rejected = response.body?.rejected as { error: { code: string; details?: unknown } }[] | undefined;
  if (response.status === 200 && response.body?.accepted === 0 && rejected?.length === 1 && rejected[0]!.error.code === ErrorCode.InvalidParameter) {
    return rejected[0]!.error.details;
  }
  const error = response.body?.error;
  if (response.status !== 400 || error?.code !== ErrorCode.InvalidParameter) return { status: response.status, body: response.text.slice(0, 300) };
  expect(Object.keys(response.body)).toEqual(['error']);
  return error.details;
}
