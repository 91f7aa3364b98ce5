import type { DeliveryAttempt } from '@tracking/contracts';
import type { EntityManager } from 'typeorm';
import { v7 as uuidv7 } from 'uuid';

/** One delivery the dispatch is about to create: the event's position in the batch, its webhook and account. */
export interface DispatchTarget {
  n: string;
  webhook_id: string;
  account_id: string;
}

/** The event fields a delivery keeps. */
export interface DispatchedEvent {
  id: string;
  type: string;
  payload: string;
}

/**
 * The account's webhooks are the same target when their URLs are, once the scheme and host are compared
 * case-insensitively and the fragment (never sent) is left out: an SQL expression over `webhooks w`.
 * The dispatch creates one delivery per event and target, for the oldest of those webhooks.
 */
export const WEBHOOK_TARGET_KEY_SQL = `(lower(substring(w.url from '^[^:/?#]*://[^/?#]*')) || coalesce(substring(w.url from '^[^:/?#]*://[^/?#]*([^#]*)'), ''))`;

/**
 * Spends the accounts' delivery budgets of the current clock hour (UTC) on `targets`, in their order: the
 * answer says, per target, whether it fits. Every target counts against the budget, sent or not, so
 * the budget is spent exactly once whatever order concurrent dispatchers take. The rows are upserted in
 * account order (concurrent dispatchers lock them in one order) and held until the transaction ends;
 * the account's rows of past hours are deleted on the way.
 */
export async function spendDeliveryBudget(manager: EntityManager, targets: readonly DispatchTarget[], perHour: number): Promise<boolean[]> {
  const requested = new Map<string, number>();
  for (const target of targets) requested.set(target.account_id, (requested.get(target.account_id) ?? 0) + 1);
  const accounts = [...requested.keys()].sort();
  const rows: { account_id: string; requested: string }[] = await manager.query(
    `INSERT INTO webhook_delivery_budgets AS b (account_id, window_start, requested)
     SELECT a.account_id, date_trunc('hour', now()), a.requested
     FROM unnest($1::uuid[], $2::bigint[]) AS a(account_id, requested)
     ORDER BY a.account_id
     ON CONFLICT (account_id, window_start) DO UPDATE SET requested = b.requested + excluded.requested
     RETURNING b.account_id, b.requested`,
    [accounts, accounts.map((account) => requested.get(account))],
  );
  await manager.query(`DELETE FROM webhook_delivery_budgets WHERE account_id = ANY ($1::uuid[]) AND window_start < date_trunc('hour', now())`, [accounts]);
  const left = new Map<string, number>();
  for (const row of rows) {
    const before = Number(row.requested) - (requested.get(row.account_id) ?? 0);
    left.set(row.account_id, Math.max(0, perHour - before));
  }
  return targets.map((target) => {
    const room = left.get(target.account_id) ?? 0;
    if (room <= 0) return false;
    left.set(target.account_id, room - 1);
    return true;
  });
}

/** The note an unsent delivery carries in its attempt log (no request was made: `statusCode` null, 0 ms). */
export function budgetSpentAttempt(perHour: number, at: Date): DeliveryAttempt {
  return {
    at: at.toISOString(),
    statusCode: null,
    durationMs: 0,
    error: `Not sent: the account's webhook deliveries for this hour (${perHour}) were used up. Redeliver it to send it.`,
  };
}

/**
 * Records the deliveries that did not fit in the budget: Failed at once, never sent, with one note in
 * their attempt log and `attempt_count` 0 (redeliver sends them with the whole retry schedule). The
 * caller holds the webhooks' insert-order locks. Returns how many it inserted (an event that reached the
 * webhook before is skipped).
 */
export async function recordUnsentDeliveries(
  manager: EntityManager,
  targets: readonly DispatchTarget[],
  events: readonly DispatchedEvent[],
  perHour: number,
): Promise<number> {
  if (targets.length === 0) return 0;
  const now = new Date();
  const rows: unknown[] = await manager.query(
    `INSERT INTO webhook_deliveries AS d (id, tenant_id, account_id, webhook_id, event_id, event_type, payload, status, attempts, attempt_count, next_attempt_at, created_at, updated_at)
     SELECT t.id, w.tenant_id, w.account_id, w.id, e.event_id, e.event_type, e.payload, 'Failed', $7::jsonb, 0, NULL, now(), now()
     FROM unnest($1::uuid[], $2::uuid[], $3::bigint[]) WITH ORDINALITY AS t(id, webhook_id, event_n, n)
     JOIN unnest($4::uuid[], $5::text[], $6::text[]) WITH ORDINALITY AS e(event_id, event_type, payload, n) ON e.n = t.event_n
     JOIN webhooks w ON w.id = t.webhook_id
     ORDER BY t.n
     ON CONFLICT (webhook_id, event_id) DO NOTHING
     RETURNING d.id`,
    [
      targets.map(() => uuidv7()),
      targets.map((t) => t.webhook_id),
      targets.map((t) => t.n),
      events.map((e) => e.id),
      events.map((e) => e.type),
      events.map((e) => e.payload),
      JSON.stringify([budgetSpentAttempt(perHour, now)]),
    ],
  );
  return rows.length;
}
