import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withOutcomes } from '../factories/alert.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createShipment, createShipmentIn } from '../factories/shipment.factory.js';
import { expectError, expectInvalidParameter } from '../support/http-assertions.js';
import { TestStack } from '../support/stack.js';

/*
 * The tracking fields of a shipment: `autoTransitions`, `conditions` (what its readings must keep to)
 * and the read-only `excursions` totals, which the evaluation of readings adds to through its store.
 */

const FULL = {
  temperature: { minC: 2, maxC: 8, minDurationSeconds: 300 },
  humidity: { minPercent: 20, maxPercent: 70, minDurationSeconds: 0 },
  shock: { maxG: 4 },
  light: { maxLux: 50 },
  battery: { minPercent: 15 },
  signalLoss: { maxSilenceSeconds: 1800 },
};

/** Conditions the gateway or the OMS refuses, with the field and issue of the 400. */
const REFUSED: [string, unknown, string, string][] = [
  ['a temperature minimum above its maximum', { temperature: { minC: 9, maxC: 8 } }, 'conditions.temperature.minC', 'OutOfRange'],
  ['a humidity minimum above its maximum', { humidity: { minPercent: 71, maxPercent: 70 } }, 'conditions.humidity.minPercent', 'OutOfRange'],
  ['a range without a bound', { temperature: { minDurationSeconds: 60 } }, 'conditions.temperature', 'Required'],
  ['a range of nulls', { humidity: { minPercent: null, maxPercent: null } }, 'conditions.humidity', 'Required'],
  ['a temperature above the readings\' bound', { temperature: { maxC: 151 } }, 'conditions.temperature.maxC', 'OutOfRange'],
  ['a temperature below the readings\' bound', { temperature: { minC: -101 } }, 'conditions.temperature.minC', 'OutOfRange'],
  ['a string temperature', { temperature: { maxC: '8' } }, 'conditions.temperature.maxC', 'InvalidFormat'],
  ['a humidity above 100', { humidity: { maxPercent: 100.5 } }, 'conditions.humidity.maxPercent', 'OutOfRange'],
  ['a negative minDurationSeconds', { temperature: { maxC: 8, minDurationSeconds: -1 } }, 'conditions.temperature.minDurationSeconds', 'OutOfRange'],
  ['a fractional minDurationSeconds', { humidity: { maxPercent: 70, minDurationSeconds: 1.5 } }, 'conditions.humidity.minDurationSeconds', 'InvalidFormat'],
  ['a minDurationSeconds over a day', { temperature: { maxC: 8, minDurationSeconds: 86401 } }, 'conditions.temperature.minDurationSeconds', 'OutOfRange'],
  ['a shock without maxG', { shock: {} }, 'conditions.shock.maxG', 'Required'],
  ['a shock over 1000 g', { shock: { maxG: 1001 } }, 'conditions.shock.maxG', 'OutOfRange'],
  ['a null maxG', { shock: { maxG: null } }, 'conditions.shock.maxG', 'InvalidFormat'],
  ['a light over 200000 lux', { light: { maxLux: 200001 } }, 'conditions.light.maxLux', 'OutOfRange'],
  ['a battery over 100 %', { battery: { minPercent: 101 } }, 'conditions.battery.minPercent', 'OutOfRange'],
  ['a silence of 0 s', { signalLoss: { maxSilenceSeconds: 0 } }, 'conditions.signalLoss.maxSilenceSeconds', 'OutOfRange'],
  ['a silence over a week', { signalLoss: { maxSilenceSeconds: 604801 } }, 'conditions.signalLoss.maxSilenceSeconds', 'OutOfRange'],
  ['a fractional silence', { signalLoss: { maxSilenceSeconds: 60.5 } }, 'conditions.signalLoss.maxSilenceSeconds', 'InvalidFormat'],
  ['an unknown condition', { pressure: { maxHpa: 1100 } }, 'conditions.pressure', 'UnknownField'],
  ['an unknown field of a condition', { temperature: { maxC: 8, maxF: 46 } }, 'conditions.temperature.maxF', 'UnknownField'],
  ['a condition that is not an object', { shock: 4 }, 'conditions.shock', 'InvalidFormat'],
  ['conditions that are a list', [], 'conditions', 'InvalidFormat'],
  ['conditions that are a string', 'cold', 'conditions', 'InvalidFormat'],
];

describe('shipment tracking fields', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let path: string;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack);
    path = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
  });
  afterAll(() => stack?.stop());

  const post = (body: unknown) => stack.request('POST', path, { token: tenant.token, body });
  const get = (id: string) => stack.request('GET', `${path}/${id}`, { token: tenant.token });
  const patch = (id: string, body: unknown) => stack.request('PATCH', `${path}/${id}`, { token: tenant.token, body });
  const listed = async (id: string) => {
    const page = await stack.request('GET', `${path}?limit=100`, { token: tenant.token });
    return page.body.items.find((shipment: { id: string }) => shipment.id === id);
  };

  /** The answer of a write, GET and the list show the shipment alike, with the same keys in the same order. */
  async function expectSameEverywhere(answer: Record<string, unknown>): Promise<void> {
    const fetched = (await get(answer.id as string)).body;
    expect(fetched).toEqual(answer);
    expect(JSON.stringify(fetched)).toBe(JSON.stringify(answer));
    expect(JSON.stringify(await listed(answer.id as string))).toBe(JSON.stringify(answer));
  }

  it('defaults: autoTransitions false, no conditions, no excursions, no lastPosition; the tracking fields come last', async () => {
    const created = await post({ name: 'Bare' });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      autoTransitions: false,
      conditions: null,
      excursions: { temperatureSeconds: 0, humiditySeconds: 0 },
      lastPosition: null,
      eta: null,
    });
    expect(Object.keys(created.body).slice(-5)).toEqual(['autoTransitions', 'conditions', 'excursions', 'lastPosition', 'eta']);
    await expectSameEverywhere(created.body);
  });

  it('stores conditions as given, fills minDurationSeconds and a missing bound, and shows them alike everywhere', async () => {
    const full = await post({ name: 'Cold chain', autoTransitions: true, conditions: FULL });
    expect(full.status, full.text).toBe(201);
    expect(full.body.autoTransitions).toBe(true);
    expect(full.body.conditions).toEqual(FULL);
    await expectSameEverywhere(full.body);

    const partial = await post({ name: 'Partial', conditions: { temperature: { maxC: 25 }, humidity: { minPercent: 10, maxPercent: null } } });
    expect(partial.status, partial.text).toBe(201);
    expect(partial.body.conditions).toEqual({
      temperature: { minC: null, maxC: 25, minDurationSeconds: 0 },
      humidity: { minPercent: 10, maxPercent: null, minDurationSeconds: 0 },
    });
    await expectSameEverywhere(partial.body);
    // Every part optional: none at all, and a minimum equal to its maximum.
    expect((await post({ name: 'Empty', conditions: {} })).body.conditions).toEqual({});
    expect((await post({ name: 'Exact', conditions: { temperature: { minC: 5, maxC: 5 } } })).body.conditions.temperature).toEqual({ minC: 5, maxC: 5, minDurationSeconds: 0 });
  });

  it.each(REFUSED)('refuses %s on creation and in a PATCH, and changes nothing', async (_case, conditions, field, issue) => {
    expectInvalidParameter(await post({ name: 'Refused', conditions }), field, issue);
    const shipment = await createShipment(stack, tenant, { body: { conditions: FULL } });
    expectInvalidParameter(await patch(shipment.id, { conditions }), field, issue);
    expect((await get(shipment.id)).body).toEqual(shipment);
  });

  it('refuses a non-boolean autoTransitions and a client-sent excursions or lastPosition', async () => {
    expectInvalidParameter(await post({ name: 'x', autoTransitions: 'yes' }), 'autoTransitions', 'InvalidFormat');
    expectInvalidParameter(await post({ name: 'x', autoTransitions: null }), 'autoTransitions', 'InvalidFormat');
    expectInvalidParameter(await post({ name: 'x', excursions: { temperatureSeconds: 5, humiditySeconds: 0 } }), 'excursions', 'ReadOnly');
    const shipment = await createShipment(stack, tenant);
    expectInvalidParameter(await patch(shipment.id, { excursions: { temperatureSeconds: 0, humiditySeconds: 0 } }), 'excursions', 'ReadOnly');
    expectInvalidParameter(await post({ name: 'x', lastPosition: null }), 'lastPosition', 'ReadOnly');
    expectInvalidParameter(await patch(shipment.id, { lastPosition: { lat: 1, lng: 2 } }), 'lastPosition', 'ReadOnly');
  });

  it('a PATCH replaces the conditions whole, null clears them, and each change moves the version on', async () => {
    const shipment = await createShipment(stack, tenant, { body: { conditions: FULL } });
    const replaced = await patch(shipment.id, { conditions: { shock: { maxG: 2 } }, autoTransitions: true });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body).toMatchObject({ conditions: { shock: { maxG: 2 } }, autoTransitions: true });
    expect(replaced.headers.get('etag')).not.toBe(`"${1}"`);
    await expectSameEverywhere(replaced.body);
    const same = await patch(shipment.id, { conditions: { shock: { maxG: 2 } } });
    expect(same.headers.get('etag')).toBe(replaced.headers.get('etag'));
    const cleared = await patch(shipment.id, { conditions: null, autoTransitions: false });
    expect(cleared.body).toMatchObject({ conditions: null, autoTransitions: false });
    expect(cleared.headers.get('etag')).not.toBe(replaced.headers.get('etag'));
    await expectSameEverywhere(cleared.body);
  });

  it('conditions are settable while the shipment is ongoing, and not once it is closed', async () => {
    for (const status of ['InTransit', 'Delivered'] as const) {
      const shipment = await createShipmentIn(stack, tenant, status);
      const changed = await patch(shipment.id, { conditions: { battery: { minPercent: 10 } } });
      expect(changed.status, changed.text).toBe(200);
    }
    for (const status of ['Completed', 'Cancelled'] as const) {
      const shipment = await createShipmentIn(stack, tenant, status);
      expectError(await patch(shipment.id, { conditions: { battery: { minPercent: 10 } } }), 409, 'ShipmentClosed');
      expect((await get(shipment.id)).body.conditions).toBeNull();
    }
  });

  it('excursions: the store adds each excursion once, in seconds of event time, without a new version or updatedAt', async () => {
    const shipment = await createShipment(stack, tenant, { body: { conditions: FULL } });
    const before = await get(shipment.id);
    const start = Date.UTC(2026, 3, 1, 12);
    const excursion = { deviceId: null, measure: 'temperature' as const, startedAt: new Date(start), endedAt: new Date(start + 12500) };
    expect(await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.addExcursion(excursion))).toBe(true);
    // The same excursion again (a replay) adds nothing.
    expect(await withOutcomes(stack, tenant, shipment.id, (outcomes) => outcomes.addExcursion(excursion))).toBe(false);
    const device = '0190a4a0-0000-7000-8000-0000000000d1';
    await withOutcomes(stack, tenant, shipment.id, async (outcomes) => {
      expect(await outcomes.addExcursion({ ...excursion, deviceId: device })).toBe(true);
      expect(await outcomes.addExcursion({ deviceId: device, measure: 'humidity', startedAt: new Date(start), endedAt: new Date(start + 1) })).toBe(true);
    });
    const after = await get(shipment.id);
    expect(after.body.excursions).toEqual({ temperatureSeconds: 25, humiditySeconds: 0.001 });
    expect(after.body.updatedAt).toBe(before.body.updatedAt);
    expect(after.headers.get('etag')).toBe(before.headers.get('etag'));
    expect(JSON.stringify(await listed(shipment.id))).toBe(JSON.stringify(after.body));
    // A client's PATCH neither resets nor rewrites the totals.
    const patched = await patch(shipment.id, { name: 'Renamed' });
    expect(patched.body.excursions).toEqual({ temperatureSeconds: 25, humiditySeconds: 0.001 });
    expect((await get(shipment.id)).body.excursions).toEqual({ temperatureSeconds: 25, humiditySeconds: 0.001 });
  });
});
