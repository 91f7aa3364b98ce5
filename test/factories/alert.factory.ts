import { randomUUID } from 'node:crypto';
import { type Alert, AlertKind, type ShipmentScope, type ShipmentStatus } from '@tracking/contracts';
import { type Lease, leaseFence } from '@tracking/outbox';
import { DataSource } from 'typeorm';
import { EvaluationStore, type ShipmentOutcomes } from '../../apps/oms/src/evaluation/evaluation-store.js';
import type { TestTenant } from './identity.factory.js';
import type { TestStack } from '../support/stack.js';

/**
 * The evaluation's store of an OMS replica of the stack: what the evaluation of readings calls, and what
 * tests call until it exists (and to put a shipment in a known state without readings).
 */
export function evaluationStore(stack: TestStack, replica = 0): EvaluationStore {
  const oms = stack.oms[replica];
  if (!oms) throw new Error(`the stack has no OMS replica ${replica}`);
  return oms.get(EvaluationStore, { strict: false });
}

/**
 * Runs `work` on the shipment's outcomes in the evaluation's own transaction (`forEvaluations` with a chunk
 * of one shipment, as the consumer and the timers call it) and answers with the shipment's status; null
 * when the evaluation would not evaluate it (no such shipment in the account, or closed: a closed
 * shipment's last evaluation, `closing`, is left alone here).
 */
export function inEvaluation<T>(
  stack: TestStack,
  scope: ShipmentScope,
  work: (outcomes: ShipmentOutcomes) => Promise<T>,
  replica = 0,
): Promise<{ status: ShipmentStatus; result: T } | null> {
  return testLease(stack, replica).then((lease) =>
    evaluationStore(stack, replica).forEvaluations([scope], lease, async (evaluations) => {
      const open = evaluations.find((evaluation) => !evaluation.closing);
      if (!open) return null;
      return { status: open.outcomes.status, result: await work(open.outcomes) };
    }),
  );
}

const leases = new WeakMap<object, Promise<Lease>>();

/**
 * A lease of the tests' own (`test:<uuid>`, held for an hour) whose fence the store checks as it checks a
 * worker's partition lease: the store's transactions here are the tests', not a partition's.
 */
function testLease(stack: TestStack, replica: number): Promise<Lease> {
  const oms = stack.oms[replica];
  if (!oms) throw new Error(`the stack has no OMS replica ${replica}`);
  let lease = leases.get(oms);
  if (!lease) {
    const name = `test:${randomUUID()}`;
    lease = oms
      .get(DataSource)
      .query(`INSERT INTO leases (name, lease_group, owner, epoch, expires_at) VALUES ($1, 'test', 'test', 1, now() + interval '1 hour')`, [name])
      .then(() => leaseFence(name, 'test', 1));
    leases.set(oms, lease);
  }
  return lease;
}

/** Runs `work` on the shipment's outcomes; fails when the store refuses (no such shipment, or closed). */
export async function withOutcomes<T>(
  stack: TestStack,
  tenant: TestTenant,
  shipmentId: string,
  work: (outcomes: ShipmentOutcomes) => Promise<T>,
  options: { account?: number; replica?: number } = {},
): Promise<T> {
  const scope = { tenantId: tenant.tenantId, accountId: tenant.accountIds[options.account ?? 0]!, shipmentId };
  const answer = await inEvaluation(stack, scope, work, options.replica);
  if (answer === null) throw new Error(`the evaluation store refused shipment ${shipmentId}`);
  return answer.result;
}

let minute = 0;

/** An open alert of the shipment (by default TemperatureHigh of a new device, at a new startedAt), through the store. */
export async function openAlert(
  stack: TestStack,
  tenant: TestTenant,
  shipmentId: string,
  overrides: { account?: number; deviceId?: string | null; kind?: AlertKind; startedAt?: Date; threshold?: number; peakValue?: number | null } = {},
): Promise<Alert> {
  const { alert, opened } = await withOutcomes(
    stack,
    tenant,
    shipmentId,
    (outcomes) =>
      outcomes.openAlert({
        deviceId: overrides.deviceId === undefined ? randomUUID() : overrides.deviceId,
        kind: overrides.kind ?? AlertKind.TemperatureHigh,
        startedAt: overrides.startedAt ?? new Date(Date.UTC(2026, 0, 1) + ++minute * 60000),
        threshold: overrides.threshold ?? 8,
        peakValue: overrides.peakValue ?? 9,
      }),
    { account: overrides.account },
  );
  if (!opened || alert === null) throw new Error(`an alert of that device and kind was already open on shipment ${shipmentId}, or the shipment's hourly allowance of alerts is spent`);
  return alert;
}
