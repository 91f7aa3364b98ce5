import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ErrorCode } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCS_ASSET_PATHS } from '../../apps/gateway/src/openapi/docs-page.js';
import { MAPS_PATH } from '../../apps/gateway/src/share-links/tracking-page.js';
import { CONSOLE_FILES_PATH } from '../../apps/gateway/src/console/console-page.js';
import { offlineOpenApiDocument } from '../../apps/gateway/src/openapi/offline-document.js';
import { openAlert } from '../factories/alert.factory.js';
import { operationPath } from '../factories/bulk.factory.js';
import { createDevice, deviceBody } from '../factories/device.factory.js';
import { createTenant } from '../factories/identity.factory.js';
import { createItem, itemBody } from '../factories/item.factory.js';
import { createPointOfInterest, pointOfInterestBody } from '../factories/point-of-interest.factory.js';
import { createSet, setBody } from '../factories/set.factory.js';
import { createShipment, createShipmentIn, type ShipmentStatusName } from '../factories/shipment.factory.js';
import { createWebhook, sendTestPing, webhookBody } from '../factories/webhook.factory.js';
import { expectError, expectInvalidParameter } from '../support/http-assertions.js';
import { fastifyRoutes } from '../support/route-catalog.js';
import { type HttpResult, TestStack } from '../support/stack.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;
const REDOCLY = 'node_modules/@redocly/cli/bin/cli.js';
const OPENAPI_TYPESCRIPT = 'node_modules/openapi-typescript/bin/cli.js';
const TSC = 'node_modules/typescript/bin/tsc';
const CLIENT_USAGE = 'test/openapi-client/usage.ts';

/* eslint-disable @typescript-eslint/no-explicit-any -- the document is JSON these tests walk freely */
type Document = any;
type Operation = any;
/* eslint-enable @typescript-eslint/no-explicit-any */

interface DocumentedOperation {
  key: string;
  path: string;
  method: string;
  operation: Operation;
}

function operationsOf(document: Document): DocumentedOperation[] {
  return Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method] !== undefined).map((method) => ({
      key: `${method.toUpperCase()} ${path}`,
      path,
      method,
      operation: item[method],
    })),
  );
}

/** A reference to `components.<kind>.<name>`. */
const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });

/** `value`, or the component its `$ref` names. */
function resolved(document: Document, value: Operation): Operation {
  if (typeof value?.$ref !== 'string') return value;
  const [, , kind, name] = value.$ref.split('/');
  return document.components[kind][name];
}

interface LintReport {
  totals: { errors: number; warnings: number };
  problems: { severity: string; ruleId: string; message: string }[];
}

/** `redocly lint` with ./redocly.yaml; it exits non-zero on errors, with its report on stdout either way. */
async function redoclyLint(file: string): Promise<LintReport> {
  const { stdout } = await promisify(execFile)(process.execPath, [REDOCLY, 'lint', file, '--config', 'redocly.yaml', '--format=json'], {
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    maxBuffer: 64 * 1024 * 1024,
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  return JSON.parse(stdout) as LintReport;
}

describe('the OpenAPI document', () => {
  let stack: TestStack;
  let served: HttpResult;
  let document: Document;

  beforeAll(async () => {
    stack = await TestStack.start();
    served = await stack.request('GET', '/v1/openapi.json');
    document = served.body;
  });
  afterAll(() => stack?.stop());

  it('is served at /v1/openapi.json without a token, as OpenAPI 3.1 JSON that caches can keep', async () => {
    expect(served.status, served.text.slice(0, 300)).toBe(200);
    expect(served.headers.get('content-type')).toMatch(/^application\/json/);
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    // 3.0 spellings that 3.1 (JSON Schema 2020-12) no longer has: nullable, and a schema's single example.
    expect(served.text).not.toContain('"nullable"');
    expect(JSON.stringify(document.components.schemas)).not.toContain('"example"');
    const { version } = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    expect(document.info).toMatchObject({ title: 'Tracking API', version });
    expect(served.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    expect(served.headers.get('x-request-id')).toBeTruthy();

    const etag = served.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const revalidated = await stack.request('GET', '/v1/openapi.json', { headers: { 'if-none-match': etag } });
    expect({ status: revalidated.status, body: revalidated.text, etag: revalidated.headers.get('etag') }).toEqual({ status: 304, body: '', etag });
    // Generated once: the same bytes on every request.
    expect((await stack.request('GET', '/v1/openapi.json')).text).toBe(served.text);
  });

  it('is the document the code describes: `npm run build` wrote what `npm run openapi` prints without PostgreSQL, NATS or Redis', async () => {
    expect(await offlineOpenApiDocument(), 'the served document is older than the code: run npm run build').toEqual(document);
  });

  it('refuses query parameters like every other route, and leaves unknown paths to the usual 404', async () => {
    expectInvalidParameter(await stack.request('GET', '/v1/openapi.json?format=yaml'), 'format', 'UnknownField');
    for (const path of ['/v1/openapi.yaml', '/docs/', '/docs/index.html', '/docs/swagger-initializer.js', '/docs-json']) {
      const response = await stack.request('GET', path);
      expectError(response, 404, ErrorCode.RouteNotFound);
      expect(response.headers.get('x-request-id'), path).toBeTruthy();
    }
  });

  it('describes every route the gateway serves, and no route it does not', () => {
    const instance = stack.gateway.getHttpAdapter().getInstance();
    const table = fastifyRoutes(instance.printRoutes({ commonPrefix: false }));
    // The one exception, the scripts and styles of /docs, names routes that exist.
    for (const path of DOCS_ASSET_PATHS) expect(table, path).toContainEqual({ method: 'GET', path });
    const routes = table
      // Fastify answers HEAD for every GET by itself.
      .filter(({ method }) => method !== 'HEAD')
      .filter(({ path }) => !DOCS_ASSET_PATHS.includes(path))
      // The tracking page's and the console's files (the pages themselves are documented, as /docs is).
      .filter(({ path }) => !path.startsWith(MAPS_PATH) && !path.startsWith(CONSOLE_FILES_PATH))
      .map(({ method, path }) => `${method} ${path.replace(/:(\w+)/g, '{$1}')}`);
    expect(routes.length).toBeGreaterThan(40);
    const documented = operationsOf(document).map(({ key }) => key);
    expect({
      missing: routes.filter((route) => !documented.includes(route)),
      notServed: documented.filter((route) => !routes.includes(route)),
    }).toEqual({ missing: [], notServed: [] });
  });

  it('serves the interactive reference at /docs from the gateway itself, with the files it loads', async () => {
    const page = await stack.request('GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const loaded = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
    expect(loaded.sort()).toEqual([...DOCS_ASSET_PATHS].sort());
    for (const path of DOCS_ASSET_PATHS) {
      const asset = await stack.request('GET', path);
      expect({ path, status: asset.status }).toEqual({ path, status: 200 });
      expect(asset.text.length, path).toBeGreaterThan(100);
    }
    const init = await stack.request('GET', DOCS_ASSET_PATHS.find((path) => path.endsWith('-init.js'))!);
    expect(init.text).toContain('"/v1/openapi.json"');
    expect(init.text).not.toMatch(/https?:\/\//);
  });

  it('names every operation uniquely, tags it with a described tag, and secures exactly the account routes', () => {
    const operations = operationsOf(document);
    const ids = operations.map(({ operation }) => operation.operationId);
    expect(ids.every((id) => /^[a-z][A-Za-z]+$/.test(id)), ids.join()).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    const described = new Map((document.tags as { name: string; description?: string }[]).map((tag) => [tag.name, tag.description]));
    for (const { key, path, operation } of operations) {
      expect(operation.tags?.length, key).toBe(1);
      expect(described.get(operation.tags[0]), `${key}: tag ${operation.tags[0]}`).toBeTruthy();
      expect(operation.summary, key).toBeTruthy();
      // The account routes, and the list of the accounts a token may use.
      const secured = path === '/v1/accounts' || path.startsWith('/v1/accounts/');
      expect({ key, security: operation.security }).toEqual({ key, security: secured ? [{ bearer: [] }] : [] });
    }
    expect(document.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
  });

  it('describes the headers of every operation: request ids, rate limits, idempotency keys, locations, versions', () => {
    for (const { key, path, method, operation } of operationsOf(document)) {
      const probe = path.startsWith('/health/');
      const accountRoute = path.startsWith('/v1/accounts/');
      const parameters = operation.parameters as ({ $ref: string } | { in: string; name: string })[];
      expect(parameters, key).toContainEqual(ref('parameters', 'RequestId'));
      const keyed = method === 'post' && accountRoute;
      expect({ key, idempotencyKey: parameters.some((entry) => '$ref' in entry && entry.$ref.endsWith('/IdempotencyKey')) }).toEqual({
        key,
        idempotencyKey: keyed,
      });
      const conditional = parameters.some((entry) => 'name' in entry && entry.name === 'If-Match');
      for (const [status, response] of Object.entries(operation.responses as Record<string, Operation>)) {
        const at = `${key} ${status}`;
        expect(resolved(document, response).description, at).toMatch(/\w/);
        const headers = Object.keys(resolved(document, response).headers);
        expect(headers, at).toContain('X-Request-Id');
        if (!probe) expect(headers, at).toEqual(expect.arrayContaining(['RateLimit-Policy', 'RateLimit']));
        if (['201', '202'].includes(status)) expect(headers, at).toContain('Location');
        if (['202', '429', '503'].includes(status)) expect(headers, at).toContain('Retry-After');
        if (keyed && status.startsWith('2')) expect(headers, at).toContain('Idempotent-Replayed');
        if (accountRoute && status === '204') expect(headers.includes('ETag'), at).toBe(conditional && method !== 'delete');
        // A delivery (test ping, redeliver), a share link (changed only by its revocation) and a device credential
        // (changed only by its deletion) have no version to name.
        const unversioned = ['#/components/schemas/DeliveryDto', '#/components/schemas/CreatedShareLinkDto', '#/components/schemas/CredentialWithSecretDto'].includes(
          resolved(document, response).content?.['application/json']?.schema?.$ref ?? '',
        );
        if (accountRoute && ['201', '202'].includes(status) && !unversioned) expect(headers, at).toContain('ETag');
        if (unversioned) expect(headers, at).not.toContain('ETag');
      }
    }
    const operation = document.paths['/v1/accounts/{accountId}/operations/{operationId}'].get;
    expect(Object.keys(operation.responses['200'].headers)).toEqual(expect.arrayContaining(['ETag', 'Retry-After']));
    const shipment = document.paths['/v1/accounts/{accountId}/shipments/{shipmentId}'].get;
    expect(Object.keys(shipment.responses['200'].headers)).toContain('ETag');
    const shipments = document.paths['/v1/accounts/{accountId}/shipments'].get;
    expect(Object.keys(shipments.responses['200'].headers)).not.toContain('ETag');
    expect(document.components.parameters.IdempotencyKey.schema).toMatchObject({ minLength: 1, maxLength: 255 });
  });

  it('gives the headers the formats the gateway sends', async () => {
    const headers = document.components.headers;
    const matches = (name: string, value: string | null) =>
      expect({ name, value }).toEqual({ name, value: expect.stringMatching(new RegExp(headers[name].schema.pattern)) });
    const tenant = await createTenant(stack);
    const created = await stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { token: tenant.token, body: { name: 'Documented' } });
    expect(created.status).toBe(201);
    for (const name of ['X-Request-Id', 'RateLimit-Policy', 'RateLimit', 'ETag']) matches(name, created.headers.get(name));
    expect(created.headers.get('location')).toBe(`/v1/accounts/${tenant.accountIds[0]}/shipments/${created.body.id}`);
    // The token endpoint counts under two policies and lists both.
    const token = await stack.request('POST', '/v1/applications/token', {
      body: { tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: 'wrong' },
    });
    for (const name of ['RateLimit-Policy', 'RateLimit']) {
      matches(name, token.headers.get(name));
      expect(token.headers.get(name)).toContain(', ');
    }
  });

  it('sends every header it declares as always there: each success that declares one is exercised, and carries each', async () => {
    const tenant = await createTenant(stack);
    const account = `/v1/accounts/${tenant.accountIds[0]}`;
    const call = (method: string, path: string, body?: unknown) => stack.request(method, path, { token: tenant.token, body });
    const shipment = await createShipment(stack, tenant);
    const { set } = await createSet(stack, tenant, shipment.id);
    const { item } = await createItem(stack, tenant, set);
    const device = (await createDevice(stack, tenant)).device;
    const { pointOfInterest } = await createPointOfInterest(stack, tenant);
    const { webhook, path: webhookPath } = await createWebhook(stack, tenant);
    const delivery = await sendTestPing(stack, tenant, webhookPath);
    const alert = await openAlert(stack, tenant, shipment.id);
    const operation = operationPath(await call('POST', `${account}/devices/bulk-retire`, { deviceIds: [(await createDevice(stack, tenant)).device.id] }));
    const inStatus = async (status: ShipmentStatusName) => `${account}/shipments/${(await createShipmentIn(stack, tenant, status)).id}`;
    const throwaway = async () => `${account}/shipments/${(await createShipment(stack, tenant)).id}`;
    const shipmentPath = `${account}/shipments/${shipment.id}`;
    const setPath = `${shipmentPath}/sets/${set.id}`;

    /** One success of each operation and status, as `METHOD path status` of the document. */
    const exercises: Record<string, () => Promise<HttpResult>> = {
      'POST /v1/accounts/{accountId}/shipments 201': () => call('POST', `${account}/shipments`, { name: 'Headers' }),
      'GET /v1/accounts/{accountId}/shipments/{shipmentId} 200': () => call('GET', shipmentPath),
      'PATCH /v1/accounts/{accountId}/shipments/{shipmentId} 200': () => call('PATCH', shipmentPath, { name: 'Headers, renamed' }),
      'POST /v1/accounts/{accountId}/shipments/{shipmentId}/start 204': async () => call('POST', `${await throwaway()}/start`),
      'POST /v1/accounts/{accountId}/shipments/{shipmentId}/deliver 204': async () => call('POST', `${await inStatus('InTransit')}/deliver`),
      'POST /v1/accounts/{accountId}/shipments/{shipmentId}/complete 204': async () => call('POST', `${await inStatus('Delivered')}/complete`),
      'POST /v1/accounts/{accountId}/shipments/{shipmentId}/cancel 204': async () => call('POST', `${await throwaway()}/cancel`),
      'POST /v1/accounts/{accountId}/points-of-interest 201': () => call('POST', `${account}/points-of-interest`, pointOfInterestBody()),
      'GET /v1/accounts/{accountId}/points-of-interest/{poiId} 200': () => call('GET', `${account}/points-of-interest/${pointOfInterest.id}`),
      'PATCH /v1/accounts/{accountId}/points-of-interest/{poiId} 200': () => call('PATCH', `${account}/points-of-interest/${pointOfInterest.id}`, { name: 'Renamed' }),
      'POST /v1/accounts/{accountId}/shipments/{shipmentId}/sets 201': () => call('POST', `${shipmentPath}/sets`, setBody()),
      'GET /v1/accounts/{accountId}/shipments/{shipmentId}/sets/{setId} 200': () => call('GET', setPath),
      'PATCH /v1/accounts/{accountId}/shipments/{shipmentId}/sets/{setId} 200': () => call('PATCH', setPath, { name: 'Renamed' }),
      'POST /v1/accounts/{accountId}/shipments/{shipmentId}/sets/{setId}/items 201': () => call('POST', `${setPath}/items`, itemBody()),
      'GET /v1/accounts/{accountId}/shipments/{shipmentId}/sets/{setId}/items/{itemId} 200': () => call('GET', `${setPath}/items/${item.id}`),
      'PATCH /v1/accounts/{accountId}/shipments/{shipmentId}/sets/{setId}/items/{itemId} 200': () => call('PATCH', `${setPath}/items/${item.id}`, { quantity: 2 }),
      'POST /v1/accounts/{accountId}/devices 201': () => call('POST', `${account}/devices`, deviceBody()),
      'GET /v1/accounts/{accountId}/devices/{deviceId} 200': () => call('GET', `${account}/devices/${device.id}`),
      'PATCH /v1/accounts/{accountId}/devices/{deviceId} 200': () => call('PATCH', `${account}/devices/${device.id}`, { model: 'Renamed' }),
      'POST /v1/accounts/{accountId}/devices/{deviceId}/credentials 201': () => call('POST', `${account}/devices/${device.id}/credentials`, { protocol: 'Http' }),
      'POST /v1/accounts/{accountId}/devices/{deviceId}/retire 204': async () => call('POST', `${account}/devices/${(await createDevice(stack, tenant)).device.id}/retire`),
      'POST /v1/accounts/{accountId}/sets/bulk-assign 202': async () =>
        call('POST', `${account}/sets/bulk-assign`, { assignments: [{ setId: set.id, deviceId: (await createDevice(stack, tenant)).device.id }] }),
      'POST /v1/accounts/{accountId}/devices/bulk-retire 202': async () =>
        call('POST', `${account}/devices/bulk-retire`, { deviceIds: [(await createDevice(stack, tenant)).device.id] }),
      'GET /v1/accounts/{accountId}/operations/{operationId} 200': () => call('GET', operation),
      'POST /v1/accounts/{accountId}/readings 200': () => call('POST', `${account}/readings`, { readings: [{ deviceId: device.id, recordedAt: new Date().toISOString(), temperatureC: 4 }] }),
      'GET /v1/accounts/{accountId}/shipments/{shipmentId}/track 200': () => call('GET', `${shipmentPath}/track`),
      'POST /v1/accounts/{accountId}/webhooks 201': () => call('POST', `${account}/webhooks`, webhookBody()),
      'GET /v1/accounts/{accountId}/webhooks/{webhookId} 200': () => call('GET', webhookPath),
      'PATCH /v1/accounts/{accountId}/webhooks/{webhookId} 200': () => call('PATCH', webhookPath, { description: 'Renamed' }),
      'POST /v1/accounts/{accountId}/webhooks/{webhookId}/rotate-secret 200': () => call('POST', `${webhookPath}/rotate-secret`),
      'POST /v1/accounts/{accountId}/webhooks/{webhookId}/test 202': () => call('POST', `${webhookPath}/test`),
      'POST /v1/accounts/{accountId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver 202': () =>
        call('POST', `${account}/webhooks/${webhook.id}/deliveries/${delivery.id}/redeliver`),
      'GET /v1/accounts/{accountId}/alerts/{alertId} 200': () => call('GET', `${account}/alerts/${alert.id}`),
      'POST /v1/accounts/{accountId}/shipments/{shipmentId}/share-links 201': () => call('POST', `${shipmentPath}/share-links`, {}),
    };

    const alwaysSent = (response: Operation): string[] =>
      Object.entries((resolved(document, response).headers ?? {}) as Record<string, Operation>)
        .filter(([, declared]) => resolved(document, declared).required === true)
        .map(([name]) => name);
    const successes = new Map(
      operationsOf(document).flatMap(({ key, operation }) =>
        Object.entries(operation.responses as Record<string, Operation>)
          .filter(([status]) => status.startsWith('2'))
          .map(([status, response]): [string, string[]] => [`${key} ${status}`, alwaysSent(response)]),
      ),
    );
    // A success that declares a header no exercise covers fails here: add its exercise above.
    const declaring = [...successes].filter(([, headers]) => headers.some((name) => name !== 'X-Request-Id')).map(([at]) => at);
    expect(declaring.filter((at) => !(at in exercises))).toEqual([]);
    const missing: string[] = [];
    for (const [at, exercise] of Object.entries(exercises)) {
      const headers = successes.get(at);
      expect(headers, `${at} is not in the document`).toBeDefined();
      const response = await exercise();
      expect(response.status, `${at}: ${response.text}`).toBe(Number(at.split(' ').pop()));
      for (const name of [...headers!, 'RateLimit-Policy', 'RateLimit']) if (response.headers.get(name) === null) missing.push(`${at}: ${name}`);
    }
    expect(missing).toEqual([]);
  }, 120000);

  it('describes the errors of every operation in the envelope, with an example of each code it can answer', () => {
    const errorCodes = document.components.schemas.ErrorCode.enum;
    expect([...errorCodes].sort()).toEqual(Object.values(ErrorCode).sort());
    for (const { key, path, method, operation } of operationsOf(document)) {
      const statuses = Object.keys(operation.responses);
      const expected = path.startsWith('/health/') ? [] : ['429', '500'];
      if (path.startsWith('/v1/accounts/')) expected.push('400', '401', '403', '502', '503', '504');
      if (path.startsWith('/v1/accounts/') && method === 'post') expected.push('409', '422');
      expect(statuses, key).toEqual(expect.arrayContaining(expected));
      for (const [status, response] of Object.entries(operation.responses as Record<string, Operation>)) {
        if (Number(status) < 400 || (path === '/health/ready' && status === '503')) continue;
        const media = resolved(document, response).content['application/json'];
        expect(media.schema, `${key} ${status}`).toEqual(
          status === '401' ? ref('schemas', 'UnauthorizedErrorEnvelope') : ref('schemas', 'ErrorEnvelopeDto'),
        );
        const examples = Object.values(media.examples as Record<string, Operation>).map((example) => resolved(document, example));
        expect(examples.length, `${key} ${status}`).toBeGreaterThan(0);
        for (const example of examples) expect(errorCodes, `${key} ${status}`).toContain(example.value.error.code);
      }
    }
    const created = document.paths['/v1/accounts/{accountId}/shipments'].post.responses;
    expect(Object.keys(created['409'].content['application/json'].examples).sort()).toEqual(['DuplicateReference', 'IdempotencyKeyInUse']);
    expect(Object.keys(resolved(document, created['429']).headers)).toContain('Retry-After');
    expect(Object.keys(created['409'].headers)).toContain('Retry-After');
  });

  it('types whole numbers as integer, the cursor as a string, and describes the account and paging parameters', () => {
    const schemas = document.components.schemas;
    const integers = {
      'TokenResponseDto.expiresIn': schemas.TokenResponseDto.properties.expiresIn.type,
      'PageMetadataDto.total': schemas.PageMetadataDto.properties.total.type,
      'OperationResultDto.index': schemas.OperationResultDto.properties.index.type,
      ...Object.fromEntries(
        ['total', 'processed', 'succeeded', 'failed'].map((name) => [`OperationProgressDto.${name}`, schemas.OperationProgressDto.properties[name].type]),
      ),
    };
    expect(integers).toEqual(Object.fromEntries(Object.keys(integers).map((name) => [name, 'integer'])));
    let described = 0;
    for (const { key, operation } of operationsOf(document)) {
      for (const entry of operation.parameters as Operation[]) {
        const parameter = resolved(document, entry);
        const at = `${key} ${parameter.in} ${parameter.name}`;
        // A parameter of no type becomes `unknown` in a generated client, which no URL builder takes.
        expect(parameter.schema?.type ?? parameter.schema?.$ref, at).toBeTruthy();
        if (['accountId', 'cursor', 'limit', 'includeTotal'].includes(parameter.name)) {
          expect(parameter.description, at).toMatch(/\w{3}/);
          described++;
        }
      }
      const cursor = (operation.parameters as Operation[]).find((entry) => entry.name === 'cursor');
      if (cursor) expect(cursor.schema, key).toEqual({ type: 'string' });
    }
    expect(described).toBeGreaterThan(40);
  });

  it('puts no default on a request field: generated clients would make it required, and a PATCH without it changes nothing', () => {
    const requestSchemas = new Set<string>();
    for (const { operation } of operationsOf(document)) {
      const ref = operation.requestBody?.content?.['application/json']?.schema?.$ref as string | undefined;
      if (ref) requestSchemas.add(ref.split('/').pop()!);
    }
    expect([...requestSchemas]).toEqual(expect.arrayContaining(['CreateShipmentDto', 'UpdateShipmentDto', 'CreateItemDto', 'CreatePointOfInterestDto']));
    const defaults = [...requestSchemas].flatMap((name) =>
      Object.entries((document.components.schemas[name].properties ?? {}) as Record<string, Operation>)
        .filter(([, property]) => property.default !== undefined)
        .map(([property]) => `${name}.${property}`),
    );
    expect(defaults).toEqual([]);
  });

  it("compiles a client's realistic use against types openapi-typescript generates with its default flags", async () => {
    const directory = await mkdtemp(join(tmpdir(), 'openapi-client-'));
    try {
      await writeFile(join(directory, 'openapi.json'), served.text);
      await promisify(execFile)(process.execPath, [OPENAPI_TYPESCRIPT, join(directory, 'openapi.json'), '-o', join(directory, 'api.d.ts')], {
        env: { ...process.env, NO_COLOR: '1' },
      });
      await copyFile(CLIENT_USAGE, join(directory, 'usage.ts'));
      const compilerOptions = {
        target: 'ES2023',
        lib: ['ES2023', 'DOM'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: [],
      };
      await writeFile(join(directory, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['usage.ts', 'api.d.ts'] }));
      const { code, stdout } = await promisify(execFile)(process.execPath, [join(process.cwd(), TSC), '-p', join(directory, 'tsconfig.json'), '--pretty', 'false'])
        .then(({ stdout }) => ({ code: 0, stdout }))
        .catch((error: { code?: number; stdout?: string }) => ({ code: error.code ?? 1, stdout: error.stdout ?? '' }));
      const errors = stdout.split('\n').filter((line) => line.includes('error TS'));
      console.info(`openapi-typescript client: ${errors.length} type errors`);
      expect(errors).toEqual([]);
      expect(code).toBe(0);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 120000);

  it('passes Redocly lint with the committed configuration, without errors', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'openapi-'));
    try {
      const file = join(directory, 'openapi.json');
      await writeFile(file, served.text);
      const report = await redoclyLint(file);
      console.info(`redocly lint: ${report.totals.errors} errors, ${report.totals.warnings} warnings`);
      const errors = report.problems.filter((problem) => problem.severity === 'error');
      expect(errors.map(({ ruleId, message }) => `${ruleId}: ${message}`)).toEqual([]);
      expect(report.totals.errors).toBe(0);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 60000);
});
