import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { type EntryOutcome, ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { DataSource, EntityManager } from 'typeorm';
import { ReleasedTargets } from '../devices/released-targets.js';

/** The transaction one chunk of a bulk operation runs in, with what the ledger already holds for it. */
export interface ChunkTransaction {
  manager: EntityManager;
  /** Outcomes recorded for the chunk's entries by an earlier attempt, by entry index. */
  recorded: Map<number, EntryOutcome>;
}

/**
 * The database side of bulk-operation chunks: the per-operation ledger of outcomes and the link locks. The
 * batched reads and writes of devices that let one transaction decide a thousand entries in a few
 * statements are `DeviceRepository`'s, as every statement on `devices`.
 */
@Injectable()
export class OperationChunkRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly released: ReleasedTargets,
  ) {}

  /**
   * Runs `work` in one transaction that holds the operation's lock (attempts of one chunk take turns, and
   * a retry waits for an attempt still running), refuses a closed operation, waits for row locks no
   * longer than `deadline`, and hands over the outcomes already recorded for `indexes`.
   */
  withChunk<T>(operationId: string, indexes: number[], deadline: number, work: (chunk: ChunkTransaction) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(async (manager) => {
      const remaining = Math.max(1, Math.ceil(deadline - Date.now()));
      await manager.query(`SET LOCAL lock_timeout = ${remaining}`);
      await lockOperation(manager, operationId);
      const closed: unknown[] = await manager.query('SELECT 1 FROM closed_operations WHERE operation_id = $1', [operationId]);
      if (closed.length > 0) throw new DomainError(ErrorCode.OperationFinished, 'The operation is closed; it takes no more entries.');
      const recorded = await recordedOutcomes(manager, operationId, indexes);
      return work({ manager, recorded });
    });
  }

  /**
   * Takes the link lock of every shipment in shared mode, as a single link does, and returns which of
   * `targetIds` (shipments and sets) were released in a way that refuses links checked at `checkedAt`.
   */
  async lockLinkTargets(manager: EntityManager, shipmentIds: string[], targetIds: string[], checkedAt?: number): Promise<Set<string>> {
    await manager.query(
      `SELECT pg_advisory_xact_lock_shared(hashtext('links:' || s))
         FROM (SELECT DISTINCT unnest($1::text[]) AS s ORDER BY 1) AS shipments`,
      [shipmentIds],
    );
    return this.released.refusing(manager, targetIds, checkedAt);
  }

  /** Records the outcomes decided in this transaction, next to their effects. */
  async recordOutcomes(manager: EntityManager, operationId: string, outcomes: EntryOutcome[]): Promise<void> {
    if (outcomes.length === 0) return;
    await manager.query(
      `INSERT INTO operation_outcomes (operation_id, entry_index, error_code, error_message)
       SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[])`,
      [operationId, outcomes.map((o) => o.index), outcomes.map((o) => o.error?.code ?? null), outcomes.map((o) => o.error?.message ?? null)],
    );
  }

  /** Deletes the recorded outcomes and closed marks of `operationIds`, in one transaction. */
  async purge(operationIds: string[]): Promise<void> {
    if (operationIds.length === 0) return;
    await this.dataSource.transaction(async (manager) => {
      await manager.query('DELETE FROM operation_outcomes WHERE operation_id = ANY($1::uuid[])', [operationIds]);
      await manager.query('DELETE FROM closed_operations WHERE operation_id = ANY($1::uuid[])', [operationIds]);
    });
  }

  /**
   * Closes the operation: once the chunk that may be in flight has ended, no other is accepted; returns
   * the outcomes recorded from `fromIndex` on.
   */
  settle(operationId: string, fromIndex: number): Promise<EntryOutcome[]> {
    return this.dataSource.transaction(async (manager) => {
      await lockOperation(manager, operationId);
      await manager.query('INSERT INTO closed_operations (operation_id) VALUES ($1) ON CONFLICT DO NOTHING', [operationId]);
      const rows: OutcomeRow[] = await manager.query(
        `SELECT entry_index, error_code, error_message FROM operation_outcomes
          WHERE operation_id = $1 AND entry_index >= $2 ORDER BY entry_index`,
        [operationId, fromIndex],
      );
      return rows.map(toOutcome);
    });
  }
}

interface OutcomeRow {
  entry_index: number;
  error_code: ErrorCode | null;
  error_message: string | null;
}

function lockOperation(manager: EntityManager, operationId: string): Promise<unknown> {
  return manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`operation:${operationId}`]);
}

async function recordedOutcomes(manager: EntityManager, operationId: string, indexes: number[]): Promise<Map<number, EntryOutcome>> {
  const rows: OutcomeRow[] = await manager.query(
    `SELECT entry_index, error_code, error_message FROM operation_outcomes
      WHERE operation_id = $1 AND entry_index = ANY($2::int[])`,
    [operationId, indexes],
  );
  return new Map(rows.map((row) => [row.entry_index, toOutcome(row)]));
}

function toOutcome(row: OutcomeRow): EntryOutcome {
  return {
    index: row.entry_index,
    error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? '' },
  };
}
