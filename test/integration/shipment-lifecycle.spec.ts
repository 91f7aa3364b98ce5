import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, issueToken, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { ACTIONS_TO, createShipment, createShipmentIn, type ShipmentStatusName } from '../factories/shipment.factory.js';
import { expectError, TIMESTAMP_MS } from '../support/http-assertions.js';
import { type HttpResult, TestStack } from '../support/stack.js';

const STATUSES: ShipmentStatusName[] = ['Planned', 'InTransit', 'Delivered', 'Completed', 'Cancelled'];
const ACTIONS = ['start', 'deliver', 'complete', 'cancel'] as const;
type Action = (typeof ACTIONS)[number];

/** docs/api.md, "Shipments": the one status each action leads from, and the timestamp it sets. */
const VALID: Record<Action, { from: ShipmentStatusName[]; to: ShipmentStatusName; stamp: string }> = {
  start: { from: ['Planned'], to: 'InTransit', stamp: 'departedAt' },
  deliver: { from: ['InTransit'], to: 'Delivered', stamp: 'deliveredAt' },
  complete: { from: ['Delivered'], to: 'Completed', stamp: 'completedAt' },
  cancel: { from: ['Planned', 'InTransit'], to: 'Cancelled', stamp: 'cancelledAt' },
};
const STAMPS = ['departedAt', 'deliveredAt', 'completedAt', 'cancelledAt'] as const;
const VALID_PAIRS = ACTIONS.flatMap((action) => VALID[action].from.map((from) => [from, action] as const));
const INVALID_PAIRS = STATUSES.flatMap((from) =>
  ACTIONS.filter((action) => !VALID[action].from.includes(from)).map((action) => [from, action] as const),
);
const UNKNOWN_ID = '0190a4a0-0000-7000-8000-000000000000';
const STRONG_ETAG = /^"[^"]+"$/;

describe('the shipment lifecycle over HTTP', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let otherTenant: TestTenant;
  let path: string;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack, { accounts: 2 });
    otherTenant = await createTenant(stack);
    path = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
  });
  afterAll(() => stack?.stop());

  const act = (id: string, action: string, headers?: Record<string, string>, at = path, token = tenant.token) =>
    stack.request('POST', `${at}/${id}/${action}`, { token, headers });
  const get = (id: string, at = path, token = tenant.token) => stack.request('GET', `${at}/${id}`, { token });
  const patch = (id: string, body: unknown, headers?: Record<string, string>) =>
    stack.request('PATCH', `${path}/${id}`, { token: tenant.token, body, headers });
  const del = (id: string, headers?: Record<string, string>, at = path, token = tenant.token) =>
    stack.request('DELETE', `${at}/${id}`, { token, headers });
  const inState = (status: ShipmentStatusName) => createShipmentIn(stack, tenant, status);
  const expectNoContent = (response: HttpResult) => {
    expect(response.status, response.text).toBe(204);
    expect(response.text).toBe('');
  };
  const expectInvalidTransition = (response: HttpResult, from: string, action: string) => {
    expectError(response, 409, 'InvalidStateTransition', { from, action });
    expect(response.body.error.message).toMatch(new RegExp(`^Cannot ${action} the shipment: its status is ${from}; ${action} needs [A-Za-z ]+\\.$`));
  };

  describe('valid transitions', () => {
    it.each(VALID_PAIRS)('%s -> %s answers 204 without a body, moves the status on and sets its timestamp', async (from, action) => {
      const before = await inState(from);
      const { headers } = await get(before.id);
      const started = Date.now();
      const response = await act(before.id, action);
      const finished = Date.now();
      expectNoContent(response);
      expect(response.headers.get('etag')).toMatch(STRONG_ETAG);
      expect(response.headers.get('etag')).not.toBe(headers.get('etag'));

      const after = await get(before.id);
      expect(after.headers.get('etag')).toBe(response.headers.get('etag'));
      const { to, stamp } = VALID[action];
      const stampedAt = after.body[stamp];
      expect(stampedAt).toMatch(TIMESTAMP_MS);
      expect(Date.parse(stampedAt)).toBeGreaterThanOrEqual(started - 1000);
      expect(Date.parse(stampedAt)).toBeLessThanOrEqual(finished + 1000);
      expect(Date.parse(stampedAt)).toBeGreaterThanOrEqual(Date.parse(before.updatedAt));
      // Only the status, this timestamp and updatedAt change.
      expect(after.body).toEqual({ ...before, status: to, [stamp]: stampedAt, updatedAt: stampedAt });
    });

    it('goes Planned -> InTransit -> Delivered -> Completed with ordered timestamps', async () => {
      const shipment = await createShipment(stack, tenant);
      for (const action of ['start', 'deliver', 'complete']) expectNoContent(await act(shipment.id, action));
      const done = (await get(shipment.id)).body;
      expect(done.status).toBe('Completed');
      expect(done.cancelledAt).toBeNull();
      const times = ['createdAt', 'departedAt', 'deliveredAt', 'completedAt'].map((field) => Date.parse(done[field]));
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect(done.updatedAt).toBe(done.completedAt);
    });

    it('keeps departedAt when an InTransit shipment is cancelled', async () => {
      const shipment = await inState('InTransit');
      expectNoContent(await act(shipment.id, 'cancel'));
      const cancelled = (await get(shipment.id)).body;
      expect(cancelled).toMatchObject({ status: 'Cancelled', departedAt: shipment.departedAt, deliveredAt: null, completedAt: null });
      expect(cancelled.cancelledAt).toMatch(TIMESTAMP_MS);
    });
  });

  describe('invalid transitions', () => {
    const shipments = {} as Record<ShipmentStatusName, { id: string; body: unknown; etag: string }>;

    beforeAll(async () => {
      for (const status of STATUSES) {
        const shipment = await inState(status);
        shipments[status] = { id: shipment.id, body: shipment, etag: (await get(shipment.id)).headers.get('etag')! };
      }
    });

    it('covers every pair of status and action that API.md does not allow', () => {
      expect(INVALID_PAIRS).toHaveLength(STATUSES.length * ACTIONS.length - VALID_PAIRS.length);
      expect(INVALID_PAIRS).toHaveLength(15);
    });

    it.each(INVALID_PAIRS)('%s -> %s answers 409 InvalidStateTransition {from, action} and changes nothing', async (from, action) => {
      const { id, body, etag } = shipments[from];
      expectInvalidTransition(await act(id, action), from, action);
      expectInvalidTransition(await act(id, action, { 'if-match': etag }), from, action);
      const after = await get(id);
      expect(after.body).toEqual(body);
      expect(after.headers.get('etag')).toBe(etag);
    });
  });

  describe('closed shipments', () => {
    it.each(['Completed', 'Cancelled'] as ShipmentStatusName[])('a %s shipment refuses PATCH and DELETE with 409 ShipmentClosed', async (status) => {
      const shipment = await inState(status);
      const etag = (await get(shipment.id)).headers.get('etag')!;
      for (const body of [{ name: 'Too late' }, {}, { tags: ['late'] }]) {
        expectError(await patch(shipment.id, body), 409, 'ShipmentClosed');
      }
      expectError(await patch(shipment.id, { name: 'Too late' }, { 'if-match': etag }), 409, 'ShipmentClosed');
      expectError(await del(shipment.id), 409, 'ShipmentClosed');
      expectError(await del(shipment.id, { 'if-match': etag }), 409, 'ShipmentClosed');
      const after = await get(shipment.id);
      expect(after.body).toEqual(shipment);
      expect(after.headers.get('etag')).toBe(etag);
    });

    it('checks If-Match before the status: a stale ETag on a closed shipment is 412', async () => {
      const shipment = await createShipment(stack, tenant);
      const etag = (await get(shipment.id)).headers.get('etag')!;
      expectNoContent(await act(shipment.id, 'cancel'));
      expectError(await patch(shipment.id, { name: 'x' }, { 'if-match': etag }), 412, 'PreconditionFailed');
      expectError(await del(shipment.id, { 'if-match': etag }), 412, 'PreconditionFailed');
      expectError(await act(shipment.id, 'start', { 'if-match': etag }), 412, 'PreconditionFailed');
    });

    it('still validates the body first: an invalid PATCH of a closed shipment is 400', async () => {
      const shipment = await inState('Completed');
      expectError(await patch(shipment.id, { name: '' }), 400, 'InvalidParameter', { field: 'name', issue: 'OutOfRange' });
    });
  });

  describe('DELETE /shipments/{id}', () => {
    const ONGOING: ShipmentStatusName[] = ['Planned', 'InTransit', 'Delivered'];

    it.each(ONGOING)('deletes a %s shipment: 204 without a body, then 404 everywhere', async (status) => {
      const shipment = await inState(status);
      expectNoContent(await del(shipment.id));
      expectError(await get(shipment.id), 404, 'ShipmentNotExists');
      expectError(await patch(shipment.id, { name: 'x' }), 404, 'ShipmentNotExists');
      expectError(await del(shipment.id), 404, 'ShipmentNotExists');
      for (const action of ACTIONS) expectError(await act(shipment.id, action), 404, 'ShipmentNotExists');
      const listed = await stack.request('GET', `${path}?limit=100`, { token: tenant.token });
      expect(listed.text).not.toContain(shipment.id);
    });

    it('honours If-Match: stale or garbage -> 412 and kept, current -> 204', async () => {
      const shipment = await createShipment(stack, tenant);
      const first = (await get(shipment.id)).headers.get('etag')!;
      await patch(shipment.id, { name: 'Changed' });
      for (const stale of [first, '"999"', 'W/"2"', 'garbage']) {
        expectError(await del(shipment.id, { 'if-match': stale }), 412, 'PreconditionFailed');
      }
      const current = (await get(shipment.id)).headers.get('etag')!;
      expectNoContent(await del(shipment.id, { 'if-match': current }));
      expect((await get(shipment.id)).status).toBe(404);
    });

    it('deletes with If-Match: *', async () => {
      const shipment = await createShipment(stack, tenant);
      expectNoContent(await del(shipment.id, { 'if-match': '*' }));
      expect((await get(shipment.id)).status).toBe(404);
    });

    it('frees the points of interest it used', async () => {
      const { pointOfInterest, path: poiPath } = await createPointOfInterest(stack, tenant);
      const shipment = await createShipment(stack, tenant, { body: { originId: pointOfInterest.id } });
      expectError(await stack.request('DELETE', poiPath, { token: tenant.token }), 409, 'PointOfInterestInUse');
      expectNoContent(await del(shipment.id));
      expectNoContent(await stack.request('DELETE', poiPath, { token: tenant.token }));
    });
  });

  describe('If-Match on transitions (optional)', () => {
    it('stale or garbage -> 412 and unchanged; current or * -> 204; the 204 ETag serves the next write', async () => {
      const shipment = await createShipment(stack, tenant);
      const created = (await get(shipment.id)).headers.get('etag')!;
      const renamed = await patch(shipment.id, { name: 'Renamed' });
      for (const stale of [created, '"999999"', 'garbage', '""']) {
        expectError(await act(shipment.id, 'start', { 'if-match': stale }), 412, 'PreconditionFailed');
      }
      expect((await get(shipment.id)).body.status).toBe('Planned');

      const started = await act(shipment.id, 'start', { 'if-match': renamed.headers.get('etag')! });
      expectNoContent(started);
      const delivered = await act(shipment.id, 'deliver', { 'if-match': started.headers.get('etag')! });
      expectNoContent(delivered);
      const changed = await patch(shipment.id, { carrier: 'After delivery' }, { 'if-match': delivered.headers.get('etag')! });
      expect(changed.status, changed.text).toBe(200);
      expectError(await act(shipment.id, 'complete', { 'if-match': delivered.headers.get('etag')! }), 412, 'PreconditionFailed');
      expectNoContent(await act(shipment.id, 'complete', { 'if-match': '*' }));
    });
  });

  describe('concurrent transitions', () => {
    it('of 20 parallel starts of a Planned shipment exactly one succeeds; the others get 409 from InTransit', async () => {
      const shipment = await createShipment(stack, tenant);
      const answers = await Promise.all(Array.from({ length: 20 }, () => act(shipment.id, 'start')));
      const won = answers.filter((answer) => answer.status === 204);
      expect(won).toHaveLength(1);
      for (const answer of answers.filter((a) => a.status !== 204)) expectInvalidTransition(answer, 'InTransit', 'start');
      const after = await get(shipment.id);
      expect(after.body.status).toBe('InTransit');
      expect(after.headers.get('etag')).toBe(won[0]!.headers.get('etag'));
    });

    it('of parallel completes and cancels of a Delivered shipment exactly one complete succeeds', async () => {
      const shipment = await inState('Delivered');
      const actions: Action[] = ['complete', 'cancel', 'complete', 'cancel', 'complete', 'cancel', 'complete', 'cancel'];
      const answers = await Promise.all(actions.map((action) => act(shipment.id, action)));
      const won = answers.map((answer, i) => [answer, actions[i]!] as const).filter(([answer]) => answer.status === 204);
      expect(won.map(([, action]) => action)).toEqual(['complete']);
      answers.forEach((answer, i) => {
        if (answer.status === 204) return;
        expect(answer.status).toBe(409);
        expect(answer.body.error.code).toBe('InvalidStateTransition');
        expect(answer.body.error.details.action).toBe(actions[i]);
        expect(['Delivered', 'Completed']).toContain(answer.body.error.details.from);
      });
      expect((await get(shipment.id)).body).toMatchObject({ status: 'Completed', cancelledAt: null });
    });

    it.each([1, 2, 3, 4, 5])('of parallel delivers and cancels of an InTransit shipment exactly one succeeds (round %i)', async () => {
      const shipment = await inState('InTransit');
      const actions: Action[] = ['deliver', 'cancel', 'cancel', 'deliver', 'cancel', 'deliver'];
      const answers = await Promise.all(actions.map((action) => act(shipment.id, action)));
      const winners = actions.filter((_, i) => answers[i]!.status === 204);
      expect(winners).toHaveLength(1);
      const winner = winners[0]!;
      const to = VALID[winner].to;
      answers.forEach((answer, i) => {
        if (answer.status !== 204) expectInvalidTransition(answer, to, actions[i]!);
      });
      const after = (await get(shipment.id)).body;
      expect(after.status).toBe(to);
      expect(after.deliveredAt === null).toBe(winner !== 'deliver');
      expect(after.cancelledAt === null).toBe(winner !== 'cancel');
    });

    it('never skips a state: every action fired at once on a Planned shipment succeeds at most once, in lifecycle order', async () => {
      for (let round = 0; round < 5; round++) {
        const shipment = await createShipment(stack, tenant);
        const actions = Array.from({ length: 5 }, () => ['complete', 'deliver', 'start'] as Action[]).flat();
        const answers = await Promise.all(actions.map((action) => act(shipment.id, action)));
        const succeeded = actions.filter((_, i) => answers[i]!.status === 204);
        for (const answer of answers) expect([204, 409]).toContain(answer.status);
        expect(new Set(succeeded).size).toBe(succeeded.length);
        const after = (await get(shipment.id)).body;
        const reached = ['start', 'deliver', 'complete'].slice(0, succeeded.length);
        expect([...succeeded].sort()).toEqual([...reached].sort());
        expect(after.status).toBe(['Planned', 'InTransit', 'Delivered', 'Completed'][succeeded.length]);
        const stamps = ['departedAt', 'deliveredAt', 'completedAt'].slice(0, succeeded.length).map((field) => Date.parse(after[field]));
        expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
        expect(stamps.every((stamp) => !Number.isNaN(stamp))).toBe(true);
      }
    });

    it('a PATCH racing a complete either lands before it or gets 409 ShipmentClosed', async () => {
      const shipment = await inState('Delivered');
      const [patched, completed] = await Promise.all([patch(shipment.id, { carrier: 'Racing' }), act(shipment.id, 'complete')]);
      expectNoContent(completed);
      if (patched.status === 200) expect((await get(shipment.id)).body).toMatchObject({ status: 'Completed', carrier: 'Racing' });
      else {
        expectError(patched, 409, 'ShipmentClosed');
        expect((await get(shipment.id)).body).toMatchObject({ status: 'Completed', carrier: null });
      }
    });

    it('a DELETE racing a cancel: exactly one of them succeeds', async () => {
      const shipment = await createShipment(stack, tenant);
      const [deleted, cancelled] = await Promise.all([del(shipment.id), act(shipment.id, 'cancel')]);
      if (deleted.status === 204) {
        expectError(cancelled, 404, 'ShipmentNotExists');
        expect((await get(shipment.id)).status).toBe(404);
      } else {
        expectError(deleted, 409, 'ShipmentClosed');
        expectNoContent(cancelled);
        expect((await get(shipment.id)).body.status).toBe('Cancelled');
      }
    });
  });

  describe('routes', () => {
    it('answers 404 RouteNotFound for an unknown action or a wrong method', async () => {
      const shipment = await createShipment(stack, tenant);
      for (const action of ['restart', 'Start', 'START', 'deliver/now', 'reopen', 'complete-now']) {
        expectError(await act(shipment.id, action), 404, 'RouteNotFound');
      }
      for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
        expectError(await stack.request(method, `${path}/${shipment.id}/start`, { token: tenant.token }), 404, 'RouteNotFound');
      }
      expect((await get(shipment.id)).body).toEqual(shipment);
    });

    it('refuses a body with fields on an action or a DELETE as UnknownField, and changes nothing', async () => {
      const shipment = await createShipment(stack, tenant);
      for (const action of ACTIONS) {
        const response = await stack.request('POST', `${path}/${shipment.id}/${action}`, { token: tenant.token, body: { status: 'Completed' } });
        expectError(response, 400, 'InvalidParameter', { field: 'status', issue: 'UnknownField' });
      }
      expectError(await stack.request('DELETE', `${path}/${shipment.id}`, { token: tenant.token, body: { x: 1 } }), 400, 'InvalidParameter', {
        field: 'x',
        issue: 'UnknownField',
      });
      expect((await get(shipment.id)).body).toEqual(shipment);
    });

    it('takes an action or a DELETE with no body, an empty one, or {}', async () => {
      const shipment = await createShipment(stack, tenant);
      expectNoContent(await stack.request('POST', `${path}/${shipment.id}/start`, { token: tenant.token, body: {} }));
      // Content-Length: 0 and no Content-Type, as `curl -X POST` sends.
      expectNoContent(await stack.request('POST', `${path}/${shipment.id}/deliver`, { token: tenant.token, rawBody: Buffer.alloc(0) }));
      expectNoContent(await act(shipment.id, 'complete'));
      expect((await get(shipment.id)).body.status).toBe('Completed');
      const other = await createShipment(stack, tenant);
      expectNoContent(await stack.request('DELETE', `${path}/${other.id}`, { token: tenant.token, body: {} }));
      expectError(await get(other.id), 404, 'ShipmentNotExists');
    });
  });

  describe('shipments that are not there or not ours', () => {
    /** Every route on one shipment, sent for `id` under the first account of `tenant`. */
    const everyRoute = (id: string, headers?: Record<string, string>): Promise<HttpResult>[] => [
      get(id),
      patch(id, { name: 'Hijacked' }, headers),
      del(id, headers),
      ...ACTIONS.map((action) => act(id, action, headers)),
    ];
    const expectAllNotFound = async (answers: Promise<HttpResult>[], secret?: string) => {
      for (const answer of await Promise.all(answers)) {
        expectError(answer, 404, 'ShipmentNotExists');
        if (secret !== undefined) expect(answer.text).not.toContain(secret);
      }
    };

    it('answers 404 ShipmentNotExists on every route for an unknown id, with or without If-Match', async () => {
      await expectAllNotFound(everyRoute(UNKNOWN_ID));
      await expectAllNotFound(everyRoute(UNKNOWN_ID, { 'if-match': '"1"' }));
    });

    it.each(['not-a-uuid', '12345', `${UNKNOWN_ID.slice(0, -1)}g`, `${UNKNOWN_ID}0`])('answers 404 on every route for the id %s', async (id) => {
      await expectAllNotFound(everyRoute(id));
    });

    it.each(STATUSES)("answers 404 on every route for another account's %s shipment, and never shows or changes it", async (status) => {
      const secret = `Other account ${Math.random()}`;
      const other = await createShipmentIn(stack, tenant, status, { account: 1, name: secret });
      await expectAllNotFound(everyRoute(other.id), secret);
      await expectAllNotFound(everyRoute(other.id, { 'if-match': '*' }), secret);
      const untouched = await get(other.id, `/v1/accounts/${tenant.accountIds[1]}/shipments`);
      expect(untouched.body).toEqual(other);
    });

    it.each(STATUSES)("answers 404 on every route for another tenant's %s shipment, and never shows or changes it", async (status) => {
      const secret = `Other tenant ${Math.random()}`;
      const other = await createShipmentIn(stack, otherTenant, status, { name: secret });
      await expectAllNotFound(everyRoute(other.id), secret);
      await expectAllNotFound(everyRoute(other.id, { 'if-match': '*' }), secret);
      const untouched = await get(other.id, `/v1/accounts/${otherTenant.accountIds[0]}/shipments`, otherTenant.token);
      expect(untouched.body).toEqual(other);
    });

    it('answers an If-Match that names no version of ours with 412 before looking the shipment up', async () => {
      for (const action of ACTIONS) expectError(await act(UNKNOWN_ID, action, { 'if-match': 'garbage' }), 412, 'PreconditionFailed');
      expectError(await del(UNKNOWN_ID, { 'if-match': 'garbage' }), 412, 'PreconditionFailed');
    });
  });

  describe('access', () => {
    it('answers 401 without a token on DELETE and every action', async () => {
      const shipment = await createShipment(stack, tenant);
      const anonymous = [
        stack.request('DELETE', `${path}/${shipment.id}`),
        ...ACTIONS.map((action) => stack.request('POST', `${path}/${shipment.id}/${action}`)),
      ];
      for (const response of await Promise.all(anonymous)) {
        expect(response.status).toBe(401);
        expect(response.body).toEqual({ error: { code: 'Unauthorized', message: expect.any(String) } });
      }
    });

    it("answers 400 AccountNotFound for another tenant's account", async () => {
      const foreign = `/v1/accounts/${otherTenant.accountIds[0]}/shipments`;
      const shipment = await createShipment(stack, otherTenant);
      const answers = [del(shipment.id, undefined, foreign), ...ACTIONS.map((action) => act(shipment.id, action, undefined, foreign))];
      for (const response of await Promise.all(answers)) {
        expectError(response, 400, 'InvalidParameter', { field: 'accountId', issue: 'AccountNotFound' });
      }
    });

    it('lets a Viewer read but neither change, delete nor move a shipment (403 Forbidden)', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      const admin = await stack.identity.createApplication(viewer.tenantId, 'Writer', 'Admin', '*');
      const adminToken = await issueToken(stack, viewer.tenantId, admin.applicationId, admin.applicationSecret);
      const at = `/v1/accounts/${viewer.accountIds[0]}/shipments`;
      const shipment = await createShipment(stack, { ...viewer, token: adminToken });

      expect((await get(shipment.id, at, viewer.token)).body).toEqual(shipment);
      expect((await stack.request('GET', `${at}?status=Planned`, { token: viewer.token })).body.items).toEqual([shipment]);
      expectError(await stack.request('POST', at, { token: viewer.token, body: { name: 'x' } }), 403, 'Forbidden');
      expectError(await stack.request('PATCH', `${at}/${shipment.id}`, { token: viewer.token, body: { name: 'x' } }), 403, 'Forbidden');
      expectError(await del(shipment.id, undefined, at, viewer.token), 403, 'Forbidden');
      for (const action of ACTIONS) expectError(await act(shipment.id, action, undefined, at, viewer.token), 403, 'Forbidden');
      expect((await get(shipment.id, at, viewer.token)).body).toEqual(shipment);
    });
  });

  it('ACTIONS_TO of the factory agrees with the lifecycle', () => {
    for (const status of STATUSES) {
      let current: ShipmentStatusName = 'Planned';
      for (const action of ACTIONS_TO[status]) {
        expect(VALID[action as Action].from).toContain(current);
        current = VALID[action as Action].to;
      }
      expect(current).toBe(status);
    }
  });

  it('sets no lifecycle timestamp on a new shipment', async () => {
    const shipment = await createShipment(stack, tenant);
    for (const stamp of STAMPS) expect(shipment[stamp]).toBeNull();
  });
});
