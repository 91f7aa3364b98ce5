import type { EventEnvelope, TrackingEvent } from '@tracking/contracts';
import pg from 'pg';
import type { TestStack } from './stack.js';

/** Where an outbox row was read: the OMS's database or the DMS's. */
export type OutboxService = 'oms' | 'dms';

/** One outbox row as a test reads it: the service whose outbox holds it, its subject and its envelope. */
export interface OutboxEvent {
  service: OutboxService;
  seq: number;
  msgId: string;
  subject: string;
  tenantId: string;
  event: TrackingEvent;
}

/** The last outbox row of each service when `mark()` ran; rows after it are what the actions since wrote. */
export type OutboxMark = Record<OutboxService, number>;

/**
 * Reads the outboxes of a stack's OMS and DMS databases, for stacks started with
 * `OUTBOX_RELAY_ENABLED=false` (so that the relay leaves every row in place).
 *
 * A mark taken between two requests separates their rows: the services write their outbox rows inside
 * the transaction of the change, and a request is answered after that transaction committed, so every
 * row of an answered request is visible once the answer has arrived. Rows of unrelated work running
 * meanwhile (a worker finishing an earlier operation) are kept apart by filtering on the account.
 */
export class OutboxReader {
  private constructor(private readonly clients: Record<OutboxService, pg.Client>) {}

  static async connect(stack: TestStack): Promise<OutboxReader> {
    const oms = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
    const dms = new pg.Client({ connectionString: stack.env.DMS_DATABASE_URL });
    await Promise.all([oms.connect(), dms.connect()]);
    return new OutboxReader({ oms, dms });
  }

  async mark(): Promise<OutboxMark> {
    const [oms, dms] = await Promise.all([this.lastSeq('oms'), this.lastSeq('dms')]);
    return { oms, dms };
  }

  /** Every row written after `mark`, of both services, in each service's order (the OMS's first). */
  async since(mark: OutboxMark, accountId?: string): Promise<OutboxEvent[]> {
    const [oms, dms] = await Promise.all([this.rowsAfter('oms', mark.oms), this.rowsAfter('dms', mark.dms)]);
    const all = [...oms, ...dms];
    return accountId === undefined ? all : all.filter((row) => row.event.accountId === accountId);
  }

  /** Every row of both outboxes. */
  all(): Promise<OutboxEvent[]> {
    return this.since({ oms: 0, dms: 0 });
  }

  async close(): Promise<void> {
    await Promise.all([this.clients.oms.end(), this.clients.dms.end()]);
  }

  private async lastSeq(service: OutboxService): Promise<number> {
    const { rows } = await this.clients[service].query<{ seq: string | null }>('SELECT max(seq) AS seq FROM outbox');
    return Number(rows[0]?.seq ?? 0);
  }

  private async rowsAfter(service: OutboxService, after: number): Promise<OutboxEvent[]> {
    const { rows } = await this.clients[service].query<{ seq: string; msg_id: string; subject: string; payload: string }>(
      'SELECT seq, msg_id, subject, payload FROM outbox WHERE seq > $1 ORDER BY seq',
      [after],
    );
    // Only events: the DMS's outbox also carries readings messages (and a release's release markers).
    return rows.flatMap((row) => {
      const envelope = JSON.parse(row.payload) as Partial<EventEnvelope>;
      if (envelope.event === undefined || envelope.tenantId === undefined) return [];
      return [{ service, seq: Number(row.seq), msgId: row.msg_id, subject: row.subject, tenantId: envelope.tenantId, event: envelope.event }];
    });
  }
}
