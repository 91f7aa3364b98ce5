import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { type DeliveryAttempt, type EventEnvelope, EventType } from '@tracking/contracts';
import { recordEvents } from '@tracking/outbox';
import { v7 as uuidv7 } from 'uuid';
import { type DataSource, In } from 'typeorm';
import { lockDeliveryInsertOrder } from '../webhook.repository.js';
import { type DispatchTarget, recordUnsentDeliveries, spendDeliveryBudget, WEBHOOK_TARGET_KEY_SQL } from './delivery-budget.js';
import type { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookEntity } from '../webhook.entity.js';
import { toWebhookEventData } from '../webhooks.service.js';
import type { SigningSecrets } from './webhook-request.js';

/** A delivery a sender claimed, with its webhook's URL and secrets; its outcome moves it only while it holds the claim's `leaseUntil`. */
export type ClaimedDelivery = Pick<WebhookDeliveryEntity, 'id' | 'webhookId' | 'eventId' | 'payload' | 'attemptCount'> & Pick<WebhookEntity, 'url'> & SigningSecrets & { leaseUntil: Date };

/** One attempt's outcome; `retryInMs` (the delay before the next attempt) is null when it settles the delivery. */
export type AttemptOutcome = Pick<ClaimedDelivery, 'webhookId' | 'leaseUntil'> & { deliveryId: string; attempt: DeliveryAttempt; succeeded: boolean; retryInMs: number | null };

/** A delivery's log keeps its last this many attempts (`attempts_total` counts them all): a list page has to fit a NATS message. */
export const ATTEMPT_LOG_LENGTH = 20;
/** The SQL of timestamptz `column` as JavaScript's `toISOString` writes it. */
const isoText = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/** The SQL of the last ATTEMPT_LOG_LENGTH entries of the jsonb array `log`. */
const keptAttempts = (log: string) => `jsonb_path_query_array(${log}, '$[last - ${ATTEMPT_LOG_LENGTH - 1} to last]')`;

/**
 * Read in a claim (of deliveries whose lease is null or lapsed): the previous claim lapsed with no outcome
 * recorded (an outcome, a redeliver and a disable clear the lease), its sender killed mid-attempt.
 */
const UNRECORDED_CLAIM = '(d.lease_until IS NOT NULL AND d.claimed_at IS NOT NULL)';
/** The log entry of that attempt: from its claim, outcome unknown. */
const UNKNOWN_ATTEMPT = `jsonb_build_object('at', ${isoText('d.claimed_at')}, 'statusCode', NULL, 'durationMs', 0,
  'error', 'unknown: the sender stopped before recording this attempt''s outcome (it may have reached the receiver)')`;

/** The delivery still holds the claim whose outcome is being recorded (its lease is the fencing token). */
const HOLDS_LEASE = 'coalesce(d.lease_until = o.lease_until, false)';

/**
 * Every statement of webhook delivery (docs/webhook-delivery.md): dispatching events into deliveries,
 * claiming due deliveries, recording attempts, and disabling webhooks that keep failing.
 */
@Injectable()
export class DeliveryRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * One Pending delivery, due now, per event and URL of the event's account (the oldest Active webhook
   * naming it that takes the type), unless the event reached it before; beyond the account's
   * `deliveriesPerHour`, recorded Failed, unsent. One transaction: targets, budget, the targets'
   * insert-order locks (one order: no deadlock; test pings and disables take them too), then the insert,
   * Active checked again under the locks. Its commit wakes the senders (`webhook_deliveries_due`).
   */
  dispatch(events: readonly EventEnvelope[], deliveriesPerHour = Infinity): Promise<{ created: number; unsent: number }> {
    return this.dataSource.transaction(async (manager) => {
      // An event that already reached its target (the stream brought the batch again) spends no budget.
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
      if (found.length === 0) return { created: 0, unsent: 0 };
      const fits = Number.isFinite(deliveriesPerHour) ? await spendDeliveryBudget(manager, found, deliveriesPerHour) : found.map(() => true);
      await lockDeliveryInsertOrder(manager, [...new Set(found.map((t) => t.webhook_id))]);
      const eventRows = events.map((e) => ({ id: e.event.id, type: e.event.type, payload: JSON.stringify(e.event) }));
      const unsent = await recordUnsentDeliveries(manager, found.filter((_, i) => !fits[i]), eventRows, deliveriesPerHour);
      const targets = found.filter((_, i) => fits[i]);
      const inserted: unknown[] = await manager.query(
        `INSERT INTO webhook_deliveries AS d (id, tenant_id, account_id, webhook_id, event_id, event_type, payload, status, next_attempt_at, created_at, updated_at)
         SELECT t.id, w.tenant_id, w.account_id, w.id, e.event_id, e.event_type, e.payload, 'Pending', now(), now(), now()
         FROM unnest($1::uuid[], $2::uuid[], $3::bigint[]) WITH ORDINALITY AS t(id, webhook_id, event_n, n)
         JOIN unnest($4::uuid[], $5::text[], $6::text[]) WITH ORDINALITY AS e(event_id, event_type, payload, n) ON e.n = t.event_n
         JOIN webhooks w ON w.id = t.webhook_id AND w.status = 'Active'
         ORDER BY t.n
         ON CONFLICT (webhook_id, event_id) DO NOTHING
         RETURNING d.id`,
        [targets.map(() => uuidv7()), targets.map((t) => t.webhook_id), targets.map((t) => t.n), ...(['id', 'type', 'payload'] as const).map((key) => eventRows.map((e) => e[key]))],
      );
      return { created: inserted.length, unsent };
    });
  }

  /**
   * Claims up to `limit` due deliveries (Pending, due, lease lapsed) for `leaseMs`, earliest due first, at
   * most `perWebhook` per webhook minus what the sender has in flight for it (`busy`): a loose index scan
   * over the webhooks with Pending deliveries (a dead receiver's backlog costs one probe), then each one's
   * earliest `FOR UPDATE SKIP LOCKED` (concurrent senders never take one row twice). The lease is cut to
   * milliseconds so that it survives a JS Date as the fencing token.
   */
  async claim(limit: number, perWebhook: number, busy: ReadonlyMap<string, number>, leaseMs: number): Promise<ClaimedDelivery[]> {
    // TypeORM answers an UPDATE ... RETURNING with [rows, affected].
    const [rows]: [ClaimedDelivery[], number] = await this.dataSource.query(
      `WITH RECURSIVE hooks(webhook_id) AS (
         (SELECT webhook_id FROM webhook_deliveries WHERE status = 'Pending' ORDER BY webhook_id LIMIT 1)
         UNION ALL
         SELECT (SELECT d.webhook_id FROM webhook_deliveries d WHERE d.status = 'Pending' AND d.webhook_id > h.webhook_id ORDER BY d.webhook_id LIMIT 1)
         FROM hooks h WHERE h.webhook_id IS NOT NULL
       ),
       claimable AS (
         SELECT c.id FROM hooks h
         LEFT JOIN unnest($3::uuid[], $4::int[]) AS b(webhook_id, in_flight) ON b.webhook_id = h.webhook_id
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
       RETURNING d.id, d.webhook_id AS "webhookId", d.event_id AS "eventId", d.payload, d.attempt_count AS "attemptCount",
         d.lease_until AS "leaseUntil", w.url, w.secret, w.previous_secret AS "previousSecret", w.previous_secret_expires_at AS "previousSecretExpiresAt"`,
      [limit, perWebhook, [...busy.keys()], [...busy.values()], leaseMs],
    );
    return rows;
  }

  /**
   * Records attempts in one statement: each is appended to its delivery's log whatever happened meanwhile
   * (it was made); a delivery's state moves only while it holds the claim's lease (a lapsed lease, a
   * redeliver or a disable decided otherwise). Each webhook's failure streak (`failing_since`) moves too:
   * a success ends it, the failures after the last success start it. A failure that makes it
   * `disableAfterMs` long disables the webhook. Answers the webhooks it disabled.
   */
  async recordOutcomes(outcomes: readonly AttemptOutcome[], disableAfterMs: number): Promise<WebhookEntity[]> {
    const due: { id: string }[] = await this.dataSource.query(
      `WITH o AS (SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::jsonb[], $4::bool[], $5::int[], $6::uuid[], $7::timestamptz[])
         AS o(id, lease_until, attempt, succeeded, retry_ms, webhook_id, at)),
       delivery AS (
         -- Every SET expression reads the row as it is when updated (after waiting for a concurrent writer).
         UPDATE webhook_deliveries d SET
           attempts = ${keptAttempts('d.attempts || jsonb_build_array(o.attempt)')},
           attempts_total = d.attempts_total + 1,
           attempt_count = d.attempt_count + CASE WHEN ${HOLDS_LEASE} THEN 1 ELSE 0 END,
           status = CASE WHEN NOT ${HOLDS_LEASE} THEN d.status WHEN o.succeeded THEN 'Succeeded' WHEN o.retry_ms IS NULL THEN 'Failed' ELSE 'Pending' END,
           next_attempt_at = CASE WHEN NOT ${HOLDS_LEASE} THEN d.next_attempt_at WHEN o.succeeded OR o.retry_ms IS NULL THEN NULL
             ELSE now() + o.retry_ms * interval '1 millisecond' END,
           lease_until = CASE WHEN ${HOLDS_LEASE} THEN NULL ELSE d.lease_until END,
           updated_at = now()
         FROM o WHERE d.id = o.id
       ),
       streak AS (
         SELECT webhook_id, bool_or(succeeded) AS cleared, min(at) FILTER (WHERE NOT succeeded AND at > coalesce(last_success, '-infinity')) AS failing_from
         FROM (SELECT o.*, max(at) FILTER (WHERE succeeded) OVER (PARTITION BY webhook_id) AS last_success FROM o) x GROUP BY webhook_id
       ),
       -- Locked in id order, so that the recorders of several workers never deadlock; a healthy webhook is not locked.
       locked AS (
         SELECT w.id FROM webhooks w JOIN streak s ON s.webhook_id = w.id
         WHERE s.failing_from IS NOT NULL OR w.failing_since IS NOT NULL ORDER BY w.id FOR NO KEY UPDATE OF w
       ),
       webhook AS (
         UPDATE webhooks w SET failing_since = CASE WHEN s.cleared THEN s.failing_from ELSE coalesce(w.failing_since, s.failing_from) END
         FROM streak s, locked l WHERE s.webhook_id = w.id AND l.id = w.id
         RETURNING w.id, s.failing_from IS NOT NULL AND w.status = 'Active' AND w.failing_since <= now() - $8::bigint * interval '1 millisecond' AS disable
       )
       SELECT id FROM webhook WHERE disable ORDER BY id`,
      [outcomes.map((o) => o.deliveryId), outcomes.map((o) => o.leaseUntil), outcomes.map((o) => JSON.stringify(o.attempt)), outcomes.map((o) => o.succeeded),
        outcomes.map((o) => o.retryInMs), outcomes.map((o) => o.webhookId), outcomes.map((o) => o.attempt.at), disableAfterMs],
    );
    if (due.length === 0) return [];
    // Disabled in one transaction behind any dispatch in progress for them, so that none of their deliveries
    // stays Pending: Active and failing for `disableAfterMs` still, their Pending deliveries Failed, `webhook.disabled` in the outbox.
    return this.dataSource.transaction(async (manager) => {
      await lockDeliveryInsertOrder(manager, due.map((w) => w.id));
      const disabled: { id: string }[] = await manager.query(
        `WITH w AS (
           UPDATE webhooks SET status = 'Disabled', version = version + 1, updated_at = now(), disabled_reason = 'Every delivery attempt failed since '
             || ${isoText('failing_since')} || '; disabled after ' || $3 || ' of failures. Enable it again once the endpoint answers 2xx.'
           WHERE id = ANY ($1::uuid[]) AND status = 'Active' AND failing_since <= now() - $2::bigint * interval '1 millisecond'
           RETURNING id
         ),
         d AS (UPDATE webhook_deliveries SET status = 'Failed', next_attempt_at = NULL, lease_until = NULL, updated_at = now()
           WHERE webhook_id IN (SELECT id FROM w) AND status = 'Pending')
         SELECT id FROM w`,
        [due.map((w) => w.id), disableAfterMs, formatDuration(disableAfterMs)],
      );
      const webhooks = await manager.find(WebhookEntity, { where: { id: In(disabled.map((w) => w.id)) }, order: { id: 'ASC' } });
      const events = webhooks.map((w) => ({ tenantId: w.tenantId, accountId: w.accountId, type: EventType.WebhookDisabled, data: toWebhookEventData(w), occurredAt: w.updatedAt }));
      await recordEvents(manager, events);
      return webhooks;
    });
  }

  /** Deletes up to `batch` settled deliveries last changed over `retentionDays` ago, oldest first; returns how many. */
  async deleteExpired(retentionDays: number, batch: number): Promise<number> {
    const [, deleted]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
         WHERE status <> 'Pending' AND updated_at < now() - $1::int * interval '1 day' ORDER BY updated_at LIMIT $2)`,
      [retentionDays, batch],
    );
    return deleted;
  }
}

function formatDuration(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} days`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
