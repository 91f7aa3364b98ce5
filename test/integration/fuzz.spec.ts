import { randomUUID } from 'node:crypto';
import { ERROR_STATUS, ErrorCode, isErrorCode } from '@tracking/contracts';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { type AccountResources, createAccountResources } from '../support/account-resources.js';
import { UUID } from '../support/http-assertions.js';
import { type CatalogRoute, fieldsOf, RouteCatalog, withField } from '../support/route-catalog.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/** FUZZ_SEED and FUZZ_RUNS replay or lengthen a run; a failure prints the seed it needs. */
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const RUNS = Number(process.env.FUZZ_RUNS ?? 3000);
/**
 * Requests sent at once: a client's concurrency, which also keeps the run short. Each batch is one
 * fast-check run, so a failure names its batch by the seed and path fast-check prints.
 */
const CONCURRENCY = 4;
/** Every so many batches a fresh set of resources joins the pool, as fuzzed DELETEs eat the old ones. */
const REFILL_EVERY = 100;

/** Codes of the layers in front of every route (parsing, routing, limits, idempotency), which no route lists. */
const ANY_ROUTE: ReadonlySet<string> = new Set([
  ErrorCode.MalformedRequest,
  ErrorCode.RouteNotFound,
  ErrorCode.PayloadTooLarge,
  ErrorCode.UnsupportedMediaType,
  ErrorCode.RateLimitExceeded,
  ErrorCode.IdempotencyKeyInUse,
  ErrorCode.IdempotencyKeyReused,
]);
const SUCCESS = new Set([200, 201, 202, 204]);
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** Which id goes into a path parameter: resolved when the request is sent, against the pools of that moment. */
type IdChoice =
  | { from: 'own'; index: number }
  | { from: 'sibling' | 'foreign' | 'random' }
  | { from: 'garbage'; text: string };

type BodyChoice =
  | { kind: 'none' | 'example' }
  | { kind: 'spoiled'; field: number; value: unknown }
  | { kind: 'fields'; entries: [number, unknown][] }
  | { kind: 'json'; value: unknown }
  | { kind: 'raw'; text: string };

interface FuzzRequest {
  route: number;
  method: string | null;
  ids: Record<string, IdChoice>;
  query: readonly [string, string][];
  body: BodyChoice;
  token: 'owner' | 'victim' | 'none' | 'garbage';
  contentType: string | null;
  ifMatch: string | null;
  idempotencyKey: string | null;
}

/**
 * Thousands of generated requests over every route of the running gateway: valid and hostile ids,
 * query strings, bodies and headers. The only acceptable answers are a success status the route
 * documents, or an error in the envelope with a known code whose status matches, which the route
 * documents (or which any route may give). Never a 5xx.
 */
describe('fuzzing every route', () => {
  let stack: TestStack;
  let catalog: RouteCatalog;
  let owner: TestTenant;
  let victim: TestTenant;
  const ownPool: AccountResources[] = [];
  let sibling: AccountResources;
  let foreign: AccountResources;

  beforeAll(async () => {
    // No worker finishes the operations the run records (its own bulk requests and each pool refill's), so
    // the account's bound of unfinished operations (10) would refuse a refill once the generated requests
    // happened to record enough of them: which depends on the route list, not on what the fuzz checks.
    stack = await TestStack.start({ env: { OPERATIONS_MAX_UNFINISHED: '10000' } });
    catalog = RouteCatalog.of(stack.gateway);
    [owner, victim] = [await createTenant(stack, { accounts: 2 }), await createTenant(stack)];
    ownPool.push(await createAccountResources(stack, owner, 0, 'OWN'));
    sibling = await createAccountResources(stack, owner, 1, 'SIBLING');
    foreign = await createAccountResources(stack, victim, 0, 'FOREIGN');
  });
  afterAll(() => stack?.stop());

  /** Every value any query parameter of any route may take, valid or not. */
  function queryValue(): fc.Arbitrary<string> {
    return fc.oneof(
      fc.integer({ min: -5, max: 120 }).map(String),
      fc.constantFrom('1e3', '10.0', '', ' ', 'true', 'false', 'TRUE', 'Planned', 'InTransit,Delivered', 'Available', 'Retired'),
      fc.constantFrom('BulkRetire', 'BulkSetAssignment', 'Succeeded', 'Failed', 'null', '\u0000', '%', '..%2F', 'a,b,,'),
      fc.constant('__OWN_SHIPMENT__'),
      fc.uuid(),
      fc.string({ maxLength: 30 }),
      fc.string({ unit: 'binary', maxLength: 10 }),
    );
  }

  function idChoice(): fc.Arbitrary<IdChoice> {
    return fc.oneof(
      { weight: 12, arbitrary: fc.nat().map((index): IdChoice => ({ from: 'own', index })) },
      { weight: 1, arbitrary: fc.constantFrom<IdChoice>({ from: 'sibling' }, { from: 'foreign' }, { from: 'random' }) },
      {
        weight: 1,
        arbitrary: fc
          .oneof(
            fc.string({ minLength: 1, maxLength: 40 }),
            fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }),
            fc.constantFrom('..', '.', '%2F', 'x'.repeat(300), 'NaN'),
          )
          .map((text): IdChoice => ({ from: 'garbage', text })),
      },
    );
  }

  /** A JSON value that is hostile to a field: wrong types, limits, NUL, prototype keys, a little depth. */
  function hostileValue(): fc.Arbitrary<unknown> {
    return fc.oneof(
      { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
      {
        weight: 3,
        arbitrary: fc.oneof(
          fc.string({ unit: 'binary', maxLength: 20 }),
          fc.constantFrom('', ' ', '\u0000', 'a\u0000b', 'a\ud800', '\udc00', 'x'.repeat(3000), '2025-13-45T25:61:00Z', '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a'),
        ),
      },
      { weight: 1, arbitrary: fc.constantFrom(null, [], {}, [[]], 2 ** 53 + 1, -1, 0, 1e308, -0, 1.5, true) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 60 }).map((depth) => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`) as unknown) },
      { weight: 1, arbitrary: fc.constant(JSON.parse('{"__proto__":{"polluted":true}}') as unknown) },
    );
  }

  function bodyChoice(): fc.Arbitrary<BodyChoice> {
    return fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom<BodyChoice>({ kind: 'none' }, { kind: 'example' }, { kind: 'example' }) },
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('spoiled' as const), field: fc.nat(), value: hostileValue() }) },
      {
        weight: 2,
        arbitrary: fc.record({ kind: fc.constant('fields' as const), entries: fc.array(fc.tuple(fc.nat(), hostileValue()), { maxLength: 5 }) }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('json' as const), value: fc.jsonValue({ maxDepth: 4 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('raw' as const), text: fc.string({ maxLength: 60 }) }) },
    );
  }

  function requestArbitrary(): fc.Arbitrary<FuzzRequest> {
    const params = new Set(catalog.routes.flatMap((route) => route.params));
    const queryNames = [...new Set(catalog.routes.flatMap((route) => route.queryParameters)), 'offset', 'foo', '__proto__', 'constructor'];
    return fc.record({
      route: fc.nat({ max: catalog.routes.length - 1 }),
      method: fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
      ids: fc.record(Object.fromEntries([...params].map((name) => [name, idChoice()]))),
      query: fc.oneof(
        { weight: 4, arbitrary: fc.constant<[string, string][]>([]) },
        { weight: 1, arbitrary: fc.array(fc.tuple(fc.constantFrom(...queryNames), queryValue()), { minLength: 1, maxLength: 4 }) },
      ),
      body: bodyChoice(),
      token: fc.oneof(
        { weight: 12, arbitrary: fc.constant('owner' as const) },
        { weight: 1, arbitrary: fc.constantFrom('victim' as const, 'none' as const, 'garbage' as const) },
      ),
      contentType: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8') },
        { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/xml', null) },
      ),
      ifMatch: fc.oneof(
        { weight: 4, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.constantFrom('*', '"1"', '"2"', '"999999999"', 'W/"1"', '"x"', '1', '') },
      ),
      idempotencyKey: fc.oneof(
        { weight: 3, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.stringMatching(/^[\x21-\x7e]{1,300}$/) },
        { weight: 1, arbitrary: fc.constantFrom('k1', 'k2', '') },
      ),
    });
  }

  function resolveId(name: string, choice: IdChoice): string {
    switch (choice.from) {
      case 'own':
        return ownPool[choice.index % ownPool.length]![name] ?? randomUUID();
      case 'sibling':
        return sibling[name] ?? randomUUID();
      case 'foreign':
        return foreign[name] ?? randomUUID();
      case 'random':
        return randomUUID();
      case 'garbage':
        return choice.text;
    }
  }

  /** The body as sent: a JSON text, or none. Built by hand, so that `__proto__` can be an own key. */
  function renderBody(route: CatalogRoute, choice: BodyChoice): string | undefined {
    const schema = route.bodySchema;
    const example = schema ? catalog.exampleOf(schema) : {};
    const fields = schema ? fieldsOf(catalog, schema).map(({ path }) => path) : [];
    const names = [...new Set(fields.map((path) => path.split('.')[0]!)), 'id', 'status', '__proto__', 'constructor', 'extra'];
    switch (choice.kind) {
      case 'none':
        return undefined;
      case 'example':
        return JSON.stringify(schema ? catalog.exampleOf(schema) : {});
      case 'spoiled':
        if (fields.length === 0) return JSON.stringify(choice.value);
        // The field spoiled in an otherwise minimal valid body, so that nothing else stops the request first.
        return JSON.stringify(withField(example, fields[choice.field % fields.length]!, choice.value));
      case 'fields':
        return `{${choice.entries.map(([index, value]) => `${JSON.stringify(names[index % names.length])}:${JSON.stringify(value)}`).join(',')}}`;
      case 'json':
        return JSON.stringify(choice.value);
      case 'raw':
        return choice.text;
    }
  }

  function render(request: FuzzRequest): { method: string; path: string; headers: Record<string, string>; body?: string; route: CatalogRoute } {
    const route = catalog.routes[request.route]!;
    const method = request.method ?? route.method;
    const path = route.path.replace(/:(\w+)/g, (_match, name: string) => encodeURIComponent(resolveId(name, request.ids[name]!)));
    const query = request.query
      .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value === '__OWN_SHIPMENT__' ? ownPool[0]!.shipmentId! : value)}`)
      .join('&');
    const headers: Record<string, string> = {};
    const token = { owner: owner.token, victim: victim.token, none: undefined, garbage: 'not.a.token' }[request.token];
    if (token) headers.authorization = `Bearer ${token}`;
    if (request.ifMatch !== null) headers['if-match'] = request.ifMatch;
    if (request.idempotencyKey !== null) headers['idempotency-key'] = request.idempotencyKey;
    const body = method === 'GET' || method === 'HEAD' ? undefined : renderBody(route, request.body);
    if (body !== undefined && request.contentType !== null) headers['content-type'] = request.contentType;
    return { method, path: query ? `${path}?${query}` : path, headers, body, route };
  }

  /** Why `response` is not an acceptable answer to `route`, or null when it is. */
  function problemWith(route: CatalogRoute, matched: boolean, method: string, response: HttpResult): string | null {
    if (response.status >= 500) return `a ${response.status}`;
    if (method === 'HEAD') return null;
    if (SUCCESS.has(response.status)) {
      if (response.status === 204 && response.text !== '') return 'a 204 with a body';
      if (response.status !== 204 && response.body === undefined) return 'a success that is not JSON';
      if (matched && route.documented && !route.statuses.includes(response.status)) return `an undocumented ${response.status}`;
      return null;
    }
    const error = response.body?.error as { id?: unknown; code?: unknown; message?: unknown; details?: unknown } | undefined;
    if (!error || Object.keys(response.body).join() !== 'error') return 'an error outside the envelope';
    if (!isErrorCode(error.code)) return `an unknown code ${String(error.code)}`;
    if (ERROR_STATUS[error.code] !== response.status) return `code ${error.code} with status ${response.status}`;
    if (typeof error.message !== 'string' || error.message === '') return 'an error without a message';
    if (error.code === ErrorCode.Unauthorized) {
      if (Object.keys(error).sort().join() !== 'code,message') return 'a 401 with more than code and message';
    } else if (typeof error.id !== 'string' || !UUID.test(error.id)) return 'an error without a UUID id';
    if (error.details !== undefined && (typeof error.details !== 'object' || error.details === null)) return 'details that are not an object';
    const documented = !matched || !route.documented || ANY_ROUTE.has(error.code) || route.statuses.includes(response.status);
    return documented ? null : `an undocumented ${response.status} ${error.code}`;
  }

  it(`answers ${RUNS} generated requests with documented statuses in the envelope, and never a 5xx`, async () => {
    const histogram = new Map<string, number>();
    let sent = 0;
    let batches = 0;

    /** Sends one request; the reason it was not answered acceptably, or null. */
    async function check(request: FuzzRequest): Promise<string | null> {
      const { method, path, headers, body, route } = render(request);
      const response = await stack.request(method, path, { rawBody: body, headers });
      sent++;
      const key = `${response.status} ${response.body?.error?.code ?? ''}`.trim();
      histogram.set(key, (histogram.get(key) ?? 0) + 1);
      const problem = problemWith(route, method === route.method, method, response);
      if (!problem) return null;
      const shown = { ...headers, authorization: `(${request.token})` };
      return `${method} ${path} ${JSON.stringify(shown)} ${body?.slice(0, 500) ?? ''} got ${problem}: ${response.text.slice(0, 500)}`;
    }

    await fc.assert(
      fc.asyncProperty(fc.array(requestArbitrary(), { minLength: CONCURRENCY, maxLength: CONCURRENCY }), async (batch) => {
        if (++batches % REFILL_EVERY === 0) ownPool.push(await createAccountResources(stack, owner, 0, `OWN${ownPool.length}`));
        const problems = (await Promise.all(batch.map(check))).filter((problem) => problem !== null);
        if (problems.length > 0) throw new Error(problems.join('\n'));
      }),
      { seed: SEED, numRuns: Math.ceil(RUNS / CONCURRENCY), endOnFailure: true },
    );
    const summary = [...histogram.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([key, count]) => `${key}: ${count}`);
    console.log(`fuzz: ${sent} requests (seed ${SEED}); ${summary.join(', ')}`);
    expect(sent).toBe(Math.ceil(RUNS / CONCURRENCY) * CONCURRENCY);
    expect([...histogram.keys()].some((key) => key.startsWith('5'))).toBe(false);
    // The run reached deep into the routes, not only their front doors.
    for (const status of ['200', '201', '204', '404 ShipmentNotExists', '400 InvalidParameter', '401 Unauthorized']) {
      expect(histogram.get(status), `no ${status} in ${summary.join(', ')}`).toBeGreaterThan(0);
    }
  }, 240000);
});
