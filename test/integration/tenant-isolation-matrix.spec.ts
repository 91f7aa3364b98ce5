import { ErrorCode } from '@tracking/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { type AccountResources, createAccountResources, notFoundCode, PATH_RESOURCES } from '../support/account-resources.js';
import { UUID } from '../support/http-assertions.js';
import { type CatalogRoute, fillPath, RouteCatalog } from '../support/route-catalog.js';
import { type HttpResult, TestStack } from '../support/stack.js';

/**
 * docs/api.md, "Authentication and roles": on every `/v1/accounts/{accountId}/...` route, another
 * tenant's account is 400 `AccountNotFound` and another tenant's (or another account's) resource is the resource's 404, and
 * no answer carries the other tenant's data. The routes come from the running gateway, so a route
 * added later is covered without being listed here, and one with a path parameter this file cannot
 * fill makes it fail.
 */
describe('tenant isolation on every account route', () => {
  let stack: TestStack;
  let catalog: RouteCatalog;
  let owner: TestTenant;
  let victim: TestTenant;
  /** The owner's first account, its second account, and the other tenant's account. */
  let own: AccountResources;
  let sibling: AccountResources;
  let foreign: AccountResources;
  const victimMarker = `VICTIM${Math.random().toString(36).slice(2, 10)}`;
  const siblingMarker = `SIBLING${Math.random().toString(36).slice(2, 10)}`;
  let victimSnapshot: string[];

  beforeAll(async () => {
    stack = await TestStack.start();
    catalog = RouteCatalog.of(stack.gateway);
    [owner, victim] = [await createTenant(stack, { accounts: 2 }), await createTenant(stack)];
    own = await createAccountResources(stack, owner, 0, 'OWN');
    sibling = await createAccountResources(stack, owner, 1, siblingMarker);
    foreign = await createAccountResources(stack, victim, 0, victimMarker);
    victimSnapshot = await snapshotOf(victim, foreign);
  });
  afterAll(() => stack?.stop());

  /** GET routes that read one resource (the path ends in a parameter), as the victim sees them. */
  function singleResourceRoutes(): CatalogRoute[] {
    return catalog.accountRoutes.filter((route) => route.method === 'GET' && /:\w+$/.test(route.path));
  }

  /** What every GET route shows `tenant` of its resources: a write that got through would change it. */
  async function snapshotOf(tenant: TestTenant, resources: AccountResources): Promise<string[]> {
    const reads = catalog.accountRoutes
      .filter((route) => route.method === 'GET')
      .map(async (route) => {
        const response = await stack.request('GET', fillPath(route, resources), { token: tenant.token });
        return `${route.key} ${response.status} ${response.headers.get('etag')} ${response.text}`;
      });
    return Promise.all(reads);
  }

  /** Sends `route` with `values` in its path, the owner's token and, when it takes one, a valid body. */
  function send(route: CatalogRoute, values: AccountResources): Promise<HttpResult> {
    const body = route.bodySchema ? catalog.exampleOf(route.bodySchema) : undefined;
    return stack.request(route.method, fillPath(route, values), { token: owner.token, body });
  }

  /** No marker of `markers`, and no id of `resources` but those the request itself sent. */
  function expectNothingOf(response: HttpResult, resources: AccountResources, markers: string[], sent: string[], context: string): void {
    for (const marker of markers) expect.soft(response.text, `${context}: leaks ${marker}`).not.toContain(marker);
    for (const id of Object.values(resources)) {
      if (!sent.includes(id)) expect.soft(response.text, `${context}: leaks id ${id}`).not.toContain(id);
    }
  }

  it('reads every account route from the gateway, each described and each path parameter known', () => {
    const keys = catalog.accountRoutes.map((route) => route.key);
    // A sample of what must be there, so that a broken catalog cannot pass by finding nothing.
    expect(keys).toEqual(
      expect.arrayContaining([
        'GET /v1/accounts/:accountId/shipments',
        'PATCH /v1/accounts/:accountId/shipments/:shipmentId/sets/:setId/items/:itemId',
        'PUT /v1/accounts/:accountId/shipments/:shipmentId/sets/:setId/devices/:deviceId',
        'POST /v1/accounts/:accountId/devices/:deviceId/retire',
        'DELETE /v1/accounts/:accountId/points-of-interest/:poiId',
        'POST /v1/accounts/:accountId/sets/bulk-assign',
        'POST /v1/accounts/:accountId/devices/bulk-retire',
        'GET /v1/accounts/:accountId/operations/:operationId/results',
      ]),
    );
    for (const route of catalog.accountRoutes) {
      expect(route.documented, `${route.key} is not in the OpenAPI description`).toBe(true);
      for (const param of route.params.filter((name) => name !== 'accountId')) {
        expect(notFoundCode(route, param)).toMatch(/NotExists$/);
        expect(own[param], `no fixture for ${param}`).toMatch(UUID);
      }
    }
  });

  it('finds its own resources on every single-resource route (the control for the 404s below)', async () => {
    for (const route of singleResourceRoutes()) {
      const response = await send(route, own);
      expect.soft(response.status, `${route.key}: ${response.text}`).toBe(200);
    }
  });

  it("answers 400 AccountNotFound for another tenant's account on every route, with nothing of it", async () => {
    for (const route of catalog.accountRoutes) {
      const response = await send(route, foreign);
      const context = `${route.method} ${fillPath(route, foreign)}`;
      expect.soft({ status: response.status, body: response.body }, context).toEqual({
        status: 400,
        body: {
          error: {
            id: expect.stringMatching(UUID),
            code: ErrorCode.InvalidParameter,
            message: expect.any(String),
            details: { field: 'accountId', issue: 'AccountNotFound' },
          },
        },
      });
      expectNothingOf(response, foreign, [victimMarker], [foreign.accountId!], context);
    }
  });

  describe.each([
    ['another tenant', () => ({ resources: foreign, markers: [victimMarker] })],
    ['another account of the same tenant', () => ({ resources: sibling, markers: [siblingMarker] })],
  ])('with an id of %s in the path of the own account', (_name, source) => {
    it("answers the resource's 404 on every route and every path id, with nothing of it", async () => {
      const { resources, markers } = source();
      let requests = 0;
      for (const route of catalog.accountRoutes) {
        for (const param of route.params.filter((name) => name !== 'accountId')) {
          const values = { ...own, [param]: resources[param]! };
          const response = await send(route, values);
          requests++;
          const context = `${route.method} ${fillPath(route, values)} (${param} of the other account)`;
          const code = notFoundCode(route, param);
          expect.soft({ status: response.status, code: response.body?.error?.code }, `${context}: ${response.text}`).toEqual({
            status: 404,
            code,
          });
          expectNothingOf(response, resources, markers, [resources[param]!], context);
        }
      }
      // Every kind of path id was tried somewhere.
      expect(requests).toBeGreaterThanOrEqual(Object.keys(PATH_RESOURCES).length);
    });

    it('finds nothing of it through a filter that names a resource by id', async () => {
      const { resources, markers } = source();
      const filtered = catalog.accountRoutes.filter(
        (route) => route.method === 'GET' && route.queryParameters.some((name) => name in PATH_RESOURCES),
      );
      expect(filtered.length).toBeGreaterThan(0);
      for (const route of filtered) {
        for (const name of route.queryParameters.filter((parameter) => parameter in PATH_RESOURCES)) {
          const path = `${fillPath(route, own)}?${name}=${resources[name]}`;
          const response = await stack.request('GET', path, { token: owner.token });
          expect.soft(response.status, `GET ${path}: ${response.text}`).toBe(200);
          for (const [key, value] of Object.entries(response.body ?? {})) {
            if (Array.isArray(value)) expect.soft(value, `GET ${path}: ${key}`).toEqual([]);
          }
          expectNothingOf(response, resources, markers, [resources[name]!], `GET ${path}`);
        }
      }
    });
  });

  it("leaves the other tenant's resources exactly as they were", async () => {
    expect(await snapshotOf(victim, foreign)).toEqual(victimSnapshot);
    expect(victimSnapshot.every((line) => / 200 /.test(line))).toBe(true);
  });
});
