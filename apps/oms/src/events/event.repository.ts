import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { AccountScope, EventEnvelope, EventFilters, PageRequest } from '@tracking/contracts';
import { CursorCodec, cursorBinding, keysetJsonPage, lockInsertOrder, SqlConditions } from '@tracking/paging';
import type { DataSource } from 'typeorm';

/** Every statement on the `events` table: the account's feed. */
@Injectable()
export class EventRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly cursors: CursorCodec,
  ) {}

  /**
   * Stores events of the stream in the feed, each once (an event the stream delivers again is skipped by
   * its id). Each account's insert-order lock is taken, in a fixed order, before its rows get their `seq`,
   * so that `seq` order is commit order and a reader paging the feed never skips an event committed behind it.
   */
  async store(envelopes: readonly EventEnvelope[]): Promise<number> {
    if (envelopes.length === 0) return 0;
    return this.dataSource.transaction(async (manager) => {
      const accounts = [...new Set(envelopes.map((envelope) => envelope.event.accountId))].sort();
      for (const accountId of accounts) await lockInsertOrder(manager, `events:${accountId}`);
      const rows = (await manager.query(
        `INSERT INTO events (id, tenant_id, account_id, type, occurred_at, body)
         SELECT id, tenant_id, account_id, type, occurred_at, body
           FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::timestamptz[], $6::text[]) WITH ORDINALITY
             AS e(id, tenant_id, account_id, type, occurred_at, body, n)
          ORDER BY n
         ON CONFLICT (id) DO NOTHING
         RETURNING seq`,
        [
          envelopes.map((e) => e.event.id),
          envelopes.map((e) => e.tenantId),
          envelopes.map((e) => e.event.accountId),
          envelopes.map((e) => e.event.type),
          envelopes.map((e) => e.event.occurredAt),
          envelopes.map((e) => JSON.stringify(e.event)),
        ],
      )) as unknown[];
      return rows.length;
    });
  }

  /** The feed position of the account's event `id`; undefined when the feed has no such event (any more). */
  async positionOf(scope: AccountScope, id: string): Promise<string | undefined> {
    const rows = (await this.dataSource.query('SELECT seq FROM events WHERE id = $1 AND account_id = $2 AND tenant_id = $3', [
      id,
      scope.accountId,
      scope.tenantId,
    ])) as { seq: string }[];
    return rows[0]?.seq;
  }

  /** One page of the account's feed as the bytes of its JSON text, in the order the OMS recorded the events, from after `afterSeq`. */
  findPageJson(scope: AccountScope, page: PageRequest, filters: EventFilters, afterSeq: string | undefined): Promise<Buffer> {
    const where = new SqlConditions().add((p) => `tenant_id = ${p}`, scope.tenantId, 'uuid').add((p) => `account_id = ${p}`, scope.accountId, 'uuid');
    if (afterSeq !== undefined) where.add((p) => `seq > ${p}`, afterSeq, 'bigint');
    return keysetJsonPage({
      dataSource: this.dataSource,
      table: 'events',
      jsonColumn: 'body',
      where,
      oneOf: filters.type && { column: 'type', values: filters.type, type: 'text' },
      page,
      codec: this.cursors,
      // `after` only places the first page: the cursor of a later page is past it anyway.
      binding: cursorBinding('events', { accountId: scope.accountId, type: filters.type && [...filters.type].sort().join(',') }),
      itemsKey: 'items',
    });
  }

  /** Deletes up to `limit` events recorded more than `days` days ago; returns how many. */
  async deleteExpired(days: number, limit: number): Promise<number> {
    const rows = (await this.dataSource.query(
      `DELETE FROM events WHERE seq IN (
         SELECT seq FROM events WHERE recorded_at < now() - make_interval(days => $1) ORDER BY recorded_at LIMIT $2
       ) RETURNING seq`,
      [days, limit],
    )) as unknown[];
    return rows.length;
  }
}
