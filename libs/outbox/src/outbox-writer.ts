import type { EventEnvelope, EventType, TrackingEvent } from '@tracking/contracts';
import { EventSubjects } from '@tracking/contracts';
import { v7 as uuidv7 } from 'uuid';

/** Anything that runs SQL in the caller's transaction: TypeORM's EntityManager or QueryRunner. */
export interface SqlRunner {
  query(sql: string, parameters?: unknown[]): Promise<unknown>;
}

/** One message for JetStream: its id (Nats-Msg-Id), its subject without the deployment's prefix, its body. */
export interface OutboxMessage {
  id: string;
  subject: string;
  payload: string;
}

/** Messages per INSERT: three parameters each, well under PostgreSQL's 65535 per statement. */
const MESSAGES_PER_STATEMENT = 1000;

/** One SQL statement and its parameters ($1 to $n). */
export interface SqlStatement {
  sql: string;
  parameters: unknown[];
}

/**
 * Writes `messages` into the outbox in the caller's transaction: they are published if and only if the
 * transaction commits, in the order written (`VALUES` rows take their `seq` in order).
 *
 * Each message is three plain parameters, which the driver sends as they are. Both alternatives cost more
 * on a readings batch's payload (about 400 KB for 1000 readings): `text[]` arrays, whose every element the
 * driver escapes with two regular expressions, and one JSON parameter, which PostgreSQL parses and
 * unescapes again (9.1 ms per payload against 3.8 ms as a parameter; docs/readings.md, "Publication").
 *
 * `alongside`, a data-modifying statement of the caller (an UPDATE, INSERT or DELETE without RETURNING
 * needs), runs in the same statement as the first messages, as a `WITH` query, which PostgreSQL runs
 * once and to completion whether or not its output is read: one round trip fewer per transaction (the
 * readings ingest moves its devices' last known fields this way). It runs alone when there is no message.
 * Its snapshot is the outbox insert's: it must not depend on the outbox rows, nor they on it.
 */
export async function writeOutbox(runner: SqlRunner, messages: readonly OutboxMessage[], alongside?: SqlStatement): Promise<void> {
  if (messages.length === 0) {
    if (alongside) await runner.query(alongside.sql, alongside.parameters);
    return;
  }
  for (let start = 0; start < messages.length; start += MESSAGES_PER_STATEMENT) {
    const chunk = messages.slice(start, start + MESSAGES_PER_STATEMENT);
    const before = start === 0 && alongside ? alongside : undefined;
    const offset = before?.parameters.length ?? 0;
    const rows = chunk.map((_, i) => `($${offset + 3 * i + 1}::uuid, $${offset + 3 * i + 2}, $${offset + 3 * i + 3})`);
    const insert = `INSERT INTO outbox (msg_id, subject, payload) VALUES ${rows.join(', ')}`;
    const parameters = chunk.flatMap((m) => [m.id, m.subject, m.payload]);
    if (before) await runner.query(`WITH alongside AS (${before.sql}) ${insert}`, [...before.parameters, ...parameters]);
    else await runner.query(insert, parameters);
  }
}

/** A change to record as an event: what happened, to which account, and the event's `data`. */
export interface EventRecord<D = unknown> {
  tenantId: string;
  accountId: string;
  type: EventType;
  data: D;
  /** When the change was recorded; now by default. */
  occurredAt?: Date;
}

/** The event (with a new UUIDv7 id) and its outbox message, for `record`. */
export function eventMessage(record: EventRecord): { event: TrackingEvent; message: OutboxMessage } {
  const event: TrackingEvent = {
    id: uuidv7(),
    type: record.type,
    occurredAt: (record.occurredAt ?? new Date()).toISOString(),
    accountId: record.accountId,
    data: record.data,
  };
  const envelope: EventEnvelope = { tenantId: record.tenantId, event };
  return {
    event,
    message: { id: event.id, subject: EventSubjects.of('', record.tenantId, record.accountId, record.type), payload: JSON.stringify(envelope) },
  };
}

/**
 * Records events in the caller's transaction (the transactional outbox): each is published exactly once
 * on the events stream if the transaction commits, never if it rolls back. Returns the events as recorded.
 */
export async function recordEvents(runner: SqlRunner, records: readonly EventRecord[]): Promise<TrackingEvent[]> {
  const built = records.map(eventMessage);
  await writeOutbox(runner, built.map((b) => b.message));
  return built.map((b) => b.event);
}
