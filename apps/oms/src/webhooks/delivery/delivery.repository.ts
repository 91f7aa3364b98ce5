import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { type EventEnvelope, EventType, WebhookStatus } from '@tracking/contracts';
import { recordEvents } from '@tracking/outbox';
import { v7 as uuidv7 } from 'uuid';
import type { DataSource, EntityManager } from 'typeorm';
import { deliveryInsertOrderScope } from '../webhook.repository.js';
import { type DispatchTarget, recordUnsentDeliveries, spendDeliveryBudget, WEBHOOK_TARGET_KEY_SQL } from './delivery-budget.js';
import { WebhookEntity } from '../webhook.entity.js';
import { toWebhookEventData } from '../webhooks.service.js';

/** A delivery a sender claimed, with what it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  eventId: string;
  payload: string;
  /** Attempts made before this one (since the last redeliver). */
  attemptCount: number;
  /** The claim's fencing token: the outcome is recorded only while the delivery still holds it. */
  leaseUntil: string;
  url: string;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
}

/** One attempt's outcome, as the sender records it. */
export interface AttemptOutcome {
  deliveryId: string;
  webhookId: string;
  leaseUntil: string;
  attempt: { at: string; statusCode: number | null; durationMs: number; error: string | null };
  succeeded: boolean;
  /** Delay before the next attempt; null when the delivery is settled (Succeeded, or Failed after its last attempt). */
  retryInMs: number | null;
}

/** How a dispatch hands new deliveries straight to a local sender: `take` reserves a place for one of the webhook's (false: no room). */
export interface DispatchTake {
  take(webhookId: string): boolean;
  giveBack(webhookId: string): void;
  leaseMs: number;
}

const NO_TAKE: DispatchTake = { take: () => false, giveBack: () => undefined, leaseMs: 0 };

export interface DispatchResult {
  /** Deliveries inserted. */
  created: number;
  /** Those of them leased to the caller's sender, to send now. */
  claimed: ClaimedDelivery[];
  /** Deliveries recorded Failed without being sent: the account's budget of the hour was spent. */
  unsent: number;
}

/**
 * `text` as PostgreSQL's jsonb (and text) can store it: U+0000 and lone surrogates become U+FFFD. A
 * receiver's answer may hold any bytes, and one jsonb value PostgreSQL refuses fails its whole statement.
 */
export function storableText(text: string): string {
  // A round trip through UTF-8 replaces lone surrogates (they have no UTF-8 form) with U+FFFD.
  return Buffer.from(text, 'utf8').toString('utf8').replaceAll('\u0000', '\uFFFD');
}

function storableAttempt(attempt: AttemptOutcome['attempt']): AttemptOutcome['attempt'] {
  return attempt.error === null ? attempt : { ...attempt, error: storableText(attempt.error) };
}

/** A webhook the last flush disabled. */
export interface DisabledWebhook {
  id: string;
  failingSince: Date;
}

/**
 * A delivery's log keeps its last this many attempts (`attempts_total` counts them all): each attempt
 * rewrites the whole jsonb, and a delivery list page has to fit a NATS message.
 */
export const ATTEMPT_LOG_LENGTH = 20;

/** The SQL of the last ATTEMPT_LOG_LENGTH entries of the jsonb array `log`. */
function keptAttempts(log: string): string {
  return `jsonb_path_query_array(${log}, '$[last - ${ATTEMPT_LOG_LENGTH - 1} to last]')`;
}

/**
 * The delivery's previous claim lapsed with no outcome recorded (a recorded outcome, a release, a redeliver
 * and a disable all clear the lease): its sender stopped (killed) before recording the attempt, which may
 * have reached the receiver. Read in a claim, which takes only deliveries whose lease is null or lapsed.
 */
const UNRECORDED_CLAIM = '(d.lease_until IS NOT NULL AND d.claimed_at IS NOT NULL)';
/** The log entry of that attempt: from its claim, outcome unknown. */
const UNKNOWN_ATTEMPT = `jsonb_build_object('at', to_char(d.claimed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
  'statusCode', NULL, 'durationMs', 0,
  'error', 'unknown: the sender stopped before recording this attempt''s outcome (it may have reached the receiver)')`;

/** The delivery still holds the claim whose outcome is being recorded (its lease is the fencing token). */
const HOLDS_LEASE = '(d.lease_until = o.lease_until)';

/**
 * Every statement of the delivery engine (docs/webhook-delivery.md): dispatching events into deliveries,
 * claiming due deliveries, recording attempts, and disabling webhooks that keep failing.
 */
@Injectable()
export class DeliveryRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * One Pending delivery, due now, per Active webhook of the event's account that takes its type, for
   * every event of the batch, one per URL (the oldest webhook naming it); an event that already reached a
   * webhook is skipped (the stream may deliver it again). Beyond the account's `deliveriesPerHour` the
   * deliveries are recorded Failed, unsent (`delivery-budget.ts`). Returns how many Pending it created.
   *
   * Three statements in one transaction: find the targets, take each target's insert-order lock (in
   * one order, so that concurrent dispatchers never deadlock; the route's test pings take the same lock,
   * so `seq` stays commit order for the delivery log), then insert, checking the webhooks are still Active
   * under the locks (a disable takes them too, and fails what is Pending).
   *
   * `take` lets the caller's sender have the new deliveries it has room for at once, leased to it like a
   * claim (no claim statement for the common case); the others wait, due now, for any sender's claim.
   * Places `take` gave for rows that were not inserted are given back before this returns.
   */
  async dispatch(events: readonly EventEnvelope[], take: DispatchTake = NO_TAKE, deliveriesPerHour = Infinity): Promise<DispatchResult> {
    if (events.length === 0) return { created: 0, claimed: [], unsent: 0 };
    const taken: string[] = [];
    const counted: DispatchTake = {
      take: (webhookId) => {
        const ok = take.take(webhookId);
        if (ok) taken.push(webhookId);
        return ok;
      },
      giveBack: take.giveBack,
      leaseMs: take.leaseMs,
    };
    let result: DispatchResult;
    try {
      result = await this.insertDeliveries(events, counted, deliveriesPerHour);
    } catch (error) {
      // Rolled back: nothing was leased.
      for (const webhookId of taken) take.giveBack(webhookId);
      throw error;
    }
    // The places taken for rows that were not inserted (duplicates, a webhook disabled meanwhile) go back.
    const used = new Map<string, number>();
    for (const claim of result.claimed) used.set(claim.webhookId, (used.get(claim.webhookId) ?? 0) + 1);
    for (const webhookId of taken) {
      const left = used.get(webhookId) ?? 0;
      if (left > 0) used.set(webhookId, left - 1);
      else take.giveBack(webhookId);
    }
    return result;
  }

  private insertDeliveries(events: readonly EventEnvelope[], take: DispatchTake, deliveriesPerHour: number): Promise<DispatchResult> {
    return this.dataSource.transaction(async (manager) => {
      // One target per event and URL (the oldest webhook naming it: WEBHOOK_TARGET_KEY_SQL); then an event
      // that already reached it (the stream brought the batch again) is left out, and spends no budget.
      const found: DispatchTarget[] = await manager.query(
        `SELECT t.n, t.webhook_id, t.account_id FROM (
           SELECT DISTINCT ON (e.n, ${WEBHOOK_TARGET_KEY_SQL}) e.n, e.event_id, w.id AS webhook_id, w.account_id
           FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[]) WITH ORDINALITY AS e(tenant_id, account_id, event_type, event_id, n)
           JOIN webhooks w ON w.tenant_id = e.tenant_id AND w.account_id = e.account_id AND w.status = 'Active'
             AND (w.event_types = '{*}' OR e.event_type = ANY (w.event_types))
           ORDER BY e.n, ${WEBHOOK_TARGET_KEY_SQL}, w.seq
         ) t
         WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = t.webhook_id AND d.event_id = t.event_id)
         ORDER BY t.n`,
        [events.map((e) => e.tenantId), events.map((e) => e.event.accountId), events.map((e) => e.event.type), events.map((e) => e.event.id)],
      );
      if (found.length === 0) return { created: 0, claimed: [], unsent: 0 };
      const fits = Number.isFinite(deliveriesPerHour) ? await spendDeliveryBudget(manager, found, deliveriesPerHour) : found.map(() => true);
      const targets = found.filter((_, i) => fits[i]);
      await lockDeliveryInsertOrder(manager, [...new Set(found.map((t) => t.webhook_id))]);
      const eventRows = events.map((e) => ({ id: e.event.id, type: e.event.type, payload: JSON.stringify(e.event) }));
      const unsent = await recordUnsentDeliveries(manager, found.filter((_, i) => !fits[i]), eventRows, deliveriesPerHour);
      const leased = targets.map((t) => take.take(t.webhook_id));
      const inserted: (ClaimRow & { claimed: boolean })[] = await manager.query(
        `INSERT INTO webhook_deliveries AS d (id, tenant_id, account_id, webhook_id, event_id, event_type, payload, status, next_attempt_at, lease_until, claimed_at, created_at, updated_at)
         SELECT t.id, w.tenant_id, w.account_id, w.id, e.event_id, e.event_type, e.payload, 'Pending', now(),
           CASE WHEN t.leased THEN c.at + $8::int * interval '1 millisecond' END, CASE WHEN t.leased THEN c.at END, now(), now()
         FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $7::bool[]) WITH ORDINALITY AS t(id, webhook_id, event_n, leased, n)
         JOIN unnest($4::uuid[], $5::text[], $6::text[]) WITH ORDINALITY AS e(event_id, event_type, payload, n) ON e.n = t.event_n
         JOIN webhooks w ON w.id = t.webhook_id AND w.status = 'Active'
         CROSS JOIN (SELECT date_trunc('milliseconds', clock_timestamp()) AS at) c
         ORDER BY t.n
         ON CONFLICT (webhook_id, event_id) DO NOTHING
         RETURNING d.id, d.webhook_id, d.event_id, d.payload, d.attempt_count, d.lease_until, d.lease_until IS NOT NULL AS claimed`,
        [
          targets.map(() => uuidv7()),
          targets.map((t) => t.webhook_id),
          targets.map((t) => t.n),
          eventRows.map((e) => e.id),
          eventRows.map((e) => e.type),
          eventRows.map((e) => e.payload),
          leased,
          take.leaseMs,
        ],
      );
      const claimedRows = inserted.filter((row) => row.claimed);
      if (claimedRows.length === 0) return { created: inserted.length, claimed: [], unsent };
      const secrets: SecretRow[] = await manager.query(
        'SELECT id, url, secret, previous_secret, previous_secret_expires_at FROM webhooks WHERE id = ANY ($1::uuid[])',
        [[...new Set(claimedRows.map((row) => row.webhook_id))]],
      );
      const byId = new Map(secrets.map((row) => [row.id, omitId(row)]));
      // Every claimed row's webhook is there: the insert joined it, and this transaction holds its key share.
      const claimed = claimedRows.flatMap((row) => {
        const webhook = byId.get(row.webhook_id);
        return webhook ? [toClaim({ ...row, ...webhook })] : [];
      });
      return { created: inserted.length, claimed, unsent };
    });
  }

  /**
   * Claims up to `limit` due deliveries (Pending, due, lease lapsed) for `leaseMs`, at most `perWebhook`
   * per webhook minus what this sender already has in flight for it (`busy`), earliest due first.
   *
   * It walks the webhooks that have Pending deliveries (a loose index scan, so a dead receiver's backlog
   * costs one index probe, not a scan), takes each one's earliest due deliveries with
   * `FOR UPDATE SKIP LOCKED` (senders claiming at once never take the same row), and sets their lease.
   * The lease is cut to milliseconds so that it survives the trip through a JS Date as the fencing token.
   */
  async claim(limit: number, perWebhook: number, busy: ReadonlyMap<string, number>, leaseMs: number): Promise<ClaimedDelivery[]> {
    // TypeORM answers an UPDATE ... RETURNING with [rows, affected].
    const [rows]: [ClaimRow[], number] = await this.dataSource.query(
      `WITH RECURSIVE hooks(webhook_id) AS (
         (SELECT webhook_id FROM webhook_deliveries WHERE status = 'Pending' ORDER BY webhook_id LIMIT 1)
         UNION ALL
         SELECT (SELECT d.webhook_id FROM webhook_deliveries d WHERE d.status = 'Pending' AND d.webhook_id > h.webhook_id ORDER BY d.webhook_id LIMIT 1)
         FROM hooks h WHERE h.webhook_id IS NOT NULL
       ),
       busy AS (SELECT * FROM unnest($3::uuid[], $4::int[]) AS b(webhook_id, in_flight)),
       claimable AS (
         SELECT c.id FROM hooks h
         LEFT JOIN busy b ON b.webhook_id = h.webhook_id
         CROSS JOIN LATERAL (
           SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
           WHERE d.webhook_id = h.webhook_id AND d.status = 'Pending' AND d.next_attempt_at <= now()
             AND (d.lease_until IS NULL OR d.lease_until < now())
           ORDER BY d.next_attempt_at
           LIMIT greatest($2::int - coalesce(b.in_flight, 0), 0)
           FOR UPDATE OF d SKIP LOCKED
         ) c
         WHERE h.webhook_id IS NOT NULL
         ORDER BY c.next_attempt_at
         LIMIT $1
       )
       UPDATE webhook_deliveries d
       SET lease_until = n.at + $5::int * interval '1 millisecond',
         claimed_at = n.at,
         attempts = CASE WHEN ${UNRECORDED_CLAIM} THEN ${keptAttempts(`d.attempts || jsonb_build_array(${UNKNOWN_ATTEMPT})`)} ELSE d.attempts END,
         attempts_total = d.attempts_total + CASE WHEN ${UNRECORDED_CLAIM} THEN 1 ELSE 0 END
       FROM claimable c, webhooks w, (SELECT date_trunc('milliseconds', clock_timestamp()) AS at) n
       WHERE d.id = c.id AND w.id = d.webhook_id
       RETURNING d.id, d.webhook_id, d.event_id, d.payload, d.attempt_count, d.lease_until,
         w.url, w.secret, w.previous_secret, w.previous_secret_expires_at`,
      [limit, perWebhook, [...busy.keys()], [...busy.values()], leaseMs],
    );
    return rows.map(toClaim);
  }

  /**
   * Records a batch of attempts in one transaction: each attempt is appended to its delivery's log
   * whatever happened meanwhile (it was made); the delivery's state (status, next attempt, attempt
   * count, lease) changes only while it still holds this claim's lease, so an outcome that comes after
   * the lease lapsed, a redeliver, or a disable never overrides what they decided. Then the webhooks'
   * failure streaks move (`failing_since`), and the webhooks failing for `disableAfterMs` are disabled,
   * each with its `webhook.disabled` event in the outbox, in this same transaction.
   */
  recordOutcomes(outcomes: readonly AttemptOutcome[], disableAfterMs: number): Promise<DisabledWebhook[]> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query(
        // Every SET expression reads the row as it is when updated (after waiting for a concurrent writer).
        `UPDATE webhook_deliveries d SET
           attempts = ${keptAttempts('d.attempts || jsonb_build_array(o.attempt)')},
           attempts_total = d.attempts_total + 1,
           attempt_count = CASE WHEN ${HOLDS_LEASE} THEN d.attempt_count + 1 ELSE d.attempt_count END,
           status = CASE WHEN NOT coalesce(${HOLDS_LEASE}, false) THEN d.status WHEN o.succeeded THEN 'Succeeded'
             WHEN o.retry_ms IS NULL THEN 'Failed' ELSE 'Pending' END,
           next_attempt_at = CASE WHEN NOT coalesce(${HOLDS_LEASE}, false) THEN d.next_attempt_at WHEN o.succeeded OR o.retry_ms IS NULL THEN NULL
             ELSE now() + o.retry_ms * interval '1 millisecond' END,
           lease_until = CASE WHEN ${HOLDS_LEASE} THEN NULL ELSE d.lease_until END,
           updated_at = now()
         FROM unnest($1::uuid[], $2::timestamptz[], $3::jsonb[], $4::bool[], $5::int[]) AS o(id, lease_until, attempt, succeeded, retry_ms)
         WHERE d.id = o.id`,
        [
          outcomes.map((o) => o.deliveryId),
          outcomes.map((o) => o.leaseUntil),
          outcomes.map((o) => JSON.stringify(storableAttempt(o.attempt))),
          outcomes.map((o) => o.succeeded),
          outcomes.map((o) => o.retryInMs),
        ],
      );
      const streaks = failureStreaks(outcomes);
      if (streaks.length === 0) return [];
      // Every webhook whose streak may move, locked in one statement in id order (flushes of several workers
      // never deadlock), before any insert-order lock (as a dispatch, which takes those first, only needs
      // FOR KEY SHARE on them for its foreign keys, which FOR NO KEY UPDATE leaves free). A batch of successes
      // of webhooks that were not failing locks nothing.
      const locked: { id: string }[] = await manager.query(
        `SELECT w.id FROM webhooks w JOIN unnest($1::uuid[], $2::bool[]) AS s(id, failed) ON s.id = w.id
         WHERE s.failed OR w.failing_since IS NOT NULL
         ORDER BY w.id FOR NO KEY UPDATE OF w`,
        [streaks.map((s) => s.webhookId), streaks.map((s) => s.failingFrom !== null)],
      );
      if (locked.length === 0) return [];
      const lockedIds = locked.map((row) => row.id);
      await manager.query(
        `UPDATE webhooks w SET failing_since = CASE WHEN s.cleared THEN s.failing_from ELSE coalesce(w.failing_since, s.failing_from) END
         FROM unnest($1::uuid[], $2::bool[], $3::timestamptz[]) AS s(id, cleared, failing_from)
         WHERE s.id = w.id AND w.id = ANY ($4::uuid[])
           AND w.failing_since IS DISTINCT FROM (CASE WHEN s.cleared THEN s.failing_from ELSE coalesce(w.failing_since, s.failing_from) END)`,
        [streaks.map((s) => s.webhookId), streaks.map((s) => s.cleared), streaks.map((s) => s.failingFrom), lockedIds],
      );
      // Whether or not the streak's start moved, a webhook still failing may have failed long enough now.
      const failing = new Set(streaks.filter((s) => s.failingFrom !== null).map((s) => s.webhookId));
      const candidates = lockedIds.filter((id) => failing.has(id));
      return candidates.length === 0 ? [] : this.disableFailing(manager, candidates, disableAfterMs);
    });
  }

  /**
   * Disables the given webhooks (locked by the caller) that are Active and have failed for `disableAfterMs`:
   * status Disabled with its reason, a new version, their Pending deliveries Failed (none are sent while it
   * is disabled), and a `webhook.disabled` event through the outbox in the caller's transaction.
   */
  private async disableFailing(manager: EntityManager, ids: readonly string[], disableAfterMs: number): Promise<DisabledWebhook[]> {
    const due: { id: string }[] = await manager.query(
      `SELECT id FROM webhooks WHERE id = ANY ($1::uuid[]) AND status = 'Active' AND failing_since <= now() - $2::bigint * interval '1 millisecond'
       ORDER BY id`,
      [ids, disableAfterMs],
    );
    if (due.length === 0) return [];
    // Behind any dispatch in progress for these webhooks, so that none of its deliveries stays Pending.
    await lockDeliveryInsertOrder(
      manager,
      due.map((d) => d.id),
    );
    const disabled: DisabledWebhook[] = [];
    for (const { id } of due) {
      // Already locked (FOR NO KEY UPDATE) by the caller; FOR UPDATE here would wait on dispatches' key-share locks.
      const webhook = await manager.findOne(WebhookEntity, { where: { id } });
      if (!webhook || webhook.status !== WebhookStatus.Active || webhook.failingSince === null) continue;
      const now = new Date();
      webhook.status = WebhookStatus.Disabled;
      webhook.disabledReason = `Every delivery attempt failed since ${webhook.failingSince.toISOString()}; disabled after ${formatDuration(disableAfterMs)} of failures. Enable it again once the endpoint answers 2xx.`;
      webhook.version += 1;
      webhook.updatedAt = now;
      const { seq: _seq, ...columns } = webhook;
      await manager.update(WebhookEntity, { id }, columns);
      await manager.query(
        `UPDATE webhook_deliveries SET status = 'Failed', next_attempt_at = NULL, lease_until = NULL, updated_at = now()
         WHERE webhook_id = $1 AND status = 'Pending'`,
        [id],
      );
      await recordEvents(manager, [
        { tenantId: webhook.tenantId, accountId: webhook.accountId, type: EventType.WebhookDisabled, data: toWebhookEventData(webhook), occurredAt: now },
      ]);
      disabled.push({ id, failingSince: webhook.failingSince });
    }
    return disabled;
  }

  /**
   * Deletes up to `batch` settled deliveries (Succeeded or Failed) last changed more than `retentionDays`
   * ago, oldest first, through `webhook_deliveries_settled_idx`; returns how many. Pending ones are kept
   * whatever their age (a redeliver makes a delivery Pending and changed now).
   */
  async deleteExpired(retentionDays: number, batch: number): Promise<number> {
    const [, deleted]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries
         WHERE status <> 'Pending' AND updated_at < now() - $1::int * interval '1 day'
         ORDER BY updated_at LIMIT $2)`,
      [retentionDays, batch],
    );
    return deleted;
  }

  /** Gives claimed deliveries back at once (a sender stopping before it sent them). */
  async release(claims: readonly { id: string; leaseUntil: string }[]): Promise<void> {
    if (claims.length === 0) return;
    await this.dataSource.query(
      `UPDATE webhook_deliveries d SET lease_until = NULL
       FROM unnest($1::uuid[], $2::timestamptz[]) AS c(id, lease_until) WHERE d.id = c.id AND d.lease_until = c.lease_until`,
      [claims.map((c) => c.id), claims.map((c) => c.leaseUntil)],
    );
  }
}

interface ClaimRow {
  id: string;
  webhook_id: string;
  event_id: string;
  payload: string;
  attempt_count: number;
  lease_until: Date;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

interface SecretRow {
  id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

function omitId(row: SecretRow): Omit<SecretRow, 'id'> {
  const { id: _id, ...rest } = row;
  return rest;
}

function toClaim(row: ClaimRow): ClaimedDelivery {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    payload: row.payload,
    attemptCount: row.attempt_count,
    leaseUntil: row.lease_until.toISOString(),
    url: row.url,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretExpiresAt: row.previous_secret_expires_at,
  };
}

/** Takes the delivery insert-order locks of `webhookIds`, in one order (by the lock's key) whoever asks. */
async function lockDeliveryInsertOrder(manager: EntityManager, webhookIds: readonly string[]): Promise<void> {
  await manager.query(
    `SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT hashtext(s) AS k FROM unnest($1::text[]) AS s ORDER BY 1) AS keys`,
    [webhookIds.map(deliveryInsertOrderScope)],
  );
}

/**
 * Per webhook, what a batch of attempts does to its failure streak: a success in the batch ends the streak
 * (`cleared`), and the failures after the batch's last success start a new one at the first of them.
 */
export function failureStreaks(outcomes: readonly AttemptOutcome[]): { webhookId: string; cleared: boolean; failingFrom: string | null }[] {
  const byWebhook = new Map<string, AttemptOutcome[]>();
  for (const outcome of outcomes) {
    const list = byWebhook.get(outcome.webhookId) ?? [];
    list.push(outcome);
    byWebhook.set(outcome.webhookId, list);
  }
  return [...byWebhook.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([webhookId, list]) => {
      const ordered = [...list].sort((a, b) => a.attempt.at.localeCompare(b.attempt.at));
      const lastSuccess = ordered.map((o) => o.succeeded).lastIndexOf(true);
      const failingFrom = ordered.slice(lastSuccess + 1)[0]?.attempt.at ?? null;
      return { webhookId, cleared: lastSuccess >= 0, failingFrom };
    });
}

function formatDuration(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} days`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
