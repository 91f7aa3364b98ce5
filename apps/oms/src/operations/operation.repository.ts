import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import {
  type AccountScope,
  type EntryError,
  type OperationFilters,
  OperationResultStatus,
  OperationStatus,
  type PageRequest,
  UNFINISHED_OPERATION_STATUSES,
} from '@tracking/contracts';
import { ownedBy } from '@tracking/database';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { OperationEntity, OperationEntryEntity } from './operation.entity.js';

/** An entry as the worker reads it. */
export interface PendingEntry {
  index: number;
  setId: string | null;
  deviceId: string;
}

/** The outcome of one entry, to be recorded. */
export interface EntryResult {
  index: number;
  error: EntryError | null;
}

/** What an account has unfinished: Pending or Running operations and their entries not yet processed. */
export interface UnfinishedLoad {
  operations: number;
  entries: number;
}

@Injectable()
export class OperationRepository {
  constructor(
    @InjectRepository(OperationEntity) private readonly operations: Repository<OperationEntity>,
    @InjectRepository(OperationEntryEntity) private readonly entries: Repository<OperationEntryEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  /**
   * Stores the operation with its entries (`[setId | null, deviceId]`), in one transaction, unless
   * `admit` refuses what the account already has unfinished (it throws). The account's insert lock is
   * taken first, so the count `admit` sees cannot change before this insert commits: of two concurrent
   * requests for the last slot, the second counts the first.
   */
  async insert(
    operation: Omit<OperationEntity, 'seq'>,
    entries: [string | null, string][],
    admit: (unfinished: UnfinishedLoad) => void,
  ): Promise<void> {
    await this.operations.manager.transaction(async (manager) => {
      await lockInsertOrder(manager, `operations:${operation.accountId}`);
      // An aggregate without GROUP BY answers exactly one row.
      const [load] = (await manager.query(
        `SELECT count(*)::int AS operations, coalesce(sum(total - processed), 0)::int AS entries
           FROM operations WHERE account_id = $1 AND status = ANY($2)`,
        [operation.accountId, UNFINISHED_OPERATION_STATUSES],
      )) as [UnfinishedLoad];
      admit(load);
      await manager.insert(OperationEntity, operation);
      await manager.query(
        `INSERT INTO operation_entries (operation_id, entry_index, set_id, device_id)
         SELECT $1, ordinality - 1, set_id, device_id
           FROM unnest($2::uuid[], $3::uuid[]) WITH ORDINALITY AS e (set_id, device_id, ordinality)`,
        [operation.id, entries.map(([setId]) => setId), entries.map(([, deviceId]) => deviceId)],
      );
    });
  }

  findPage(scope: AccountScope, page: PageRequest, filters: OperationFilters): Promise<KeysetPage<OperationEntity>> {
    const query = this.operations
      .createQueryBuilder('o')
      .where('o.account_id = :accountId', { accountId: scope.accountId })
      .andWhere('o.tenant_id = :tenantId', { tenantId: scope.tenantId });
    if (filters.type !== undefined) query.andWhere('o.type = ANY(:types)', { types: filters.type });
    if (filters.status !== undefined) query.andWhere('o.status = ANY(:statuses)', { statuses: filters.status });
    return keysetPage(query, {
      seqColumn: 'o.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      binding: cursorBinding('operations', {
        accountId: scope.accountId,
        type: filters.type && [...filters.type].sort().join(','),
        status: filters.status && [...filters.status].sort().join(','),
      }),
    });
  }

  async findOne(scope: AccountScope, id: string): Promise<OperationEntity | null> {
    // By primary key alone, then the owner: see `ownedBy`.
    return ownedBy(await this.operations.findOneBy({ id }), scope);
  }

  /** Processed entries in index order (the order they are processed in), optionally of one status. */
  findResults(operationId: string, page: PageRequest, status?: OperationResultStatus): Promise<KeysetPage<OperationEntryEntity>> {
    const query = this.entries
      .createQueryBuilder('e')
      .where('e.operation_id = :operationId', { operationId })
      .andWhere(status === undefined ? 'e.status IS NOT NULL' : 'e.status = :status', { status });
    return keysetPage(query, {
      seqColumn: 'e.entry_index',
      seqProperty: 'index',
      page,
      codec: this.cursors,
      binding: cursorBinding('operation-results', { operationId, status }),
    });
  }

  /**
   * Cancels the operation unless it has finished; true when it did. A chunk being processed holds the
   * operation's turn (`withLocked`), so this waits for it and then sees the status it left; the worker's
   * next chunk waits for this in turn.
   */
  async cancel(scope: AccountScope, id: string): Promise<boolean> {
    return this.operations.manager.transaction(async (manager) => {
      await manager.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [turnOf(id)]);
      const [, affected] = (await manager.query(
        `UPDATE operations SET status = $4, completed_at = now(), updated_at = now(), version = version + 1
          WHERE id = $1 AND account_id = $2 AND tenant_id = $3 AND status = ANY($5)`,
        [id, scope.accountId, scope.tenantId, OperationStatus.Cancelled, UNFINISHED_OPERATION_STATUSES],
      )) as [unknown, number];
      return affected > 0;
    });
  }

  /**
   * Runs `work` in one transaction with the operation's turn and row locked; null when it does not exist.
   *
   * The turn is an advisory lock that the worker's transactions take shared and a cancel exclusive, before
   * the row: PostgreSQL serves a lock's waiters in order, so a cancel that waits for a chunk goes before
   * the worker's next chunk. The row lock alone did not keep that order: when the chunk commits, the
   * waiting `UPDATE` first follows the row to the chunk's new version, and the worker's next transaction,
   * which sees that version at once, could lock it first and apply one more chunk after the cancel.
   */
  withLocked<T>(id: string, work: (operation: OperationEntity | null, manager: EntityManager) => Promise<T>): Promise<T> {
    return this.operations.manager.transaction(async (manager) => {
      await manager.query(`SELECT pg_advisory_xact_lock_shared(hashtext($1))`, [turnOf(id)]);
      const operation = await manager.findOne(OperationEntity, { where: { id }, lock: { mode: 'pessimistic_write' } });
      return work(operation, manager);
    });
  }

  /** Up to `limit` entries from `fromIndex` on, in index order. */
  async entriesFrom(manager: EntityManager, operationId: string, fromIndex: number, limit: number): Promise<PendingEntry[]> {
    const rows: { entry_index: number; set_id: string | null; device_id: string }[] = await manager.query(
      `SELECT entry_index, set_id, device_id FROM operation_entries
        WHERE operation_id = $1 AND entry_index >= $2 ORDER BY entry_index LIMIT $3`,
      [operationId, fromIndex, limit],
    );
    return rows.map((row) => ({ index: row.entry_index, setId: row.set_id, deviceId: row.device_id }));
  }

  /**
   * Records outcomes of entries not yet processed and moves the operation's counts on by exactly the
   * entries recorded here, so the counts equal the results whatever was recorded before.
   */
  async recordResults(manager: EntityManager, operation: OperationEntity, results: EntryResult[]): Promise<void> {
    if (results.length === 0) return;
    // TypeORM answers an UPDATE with [returned rows, affected count].
    const [recorded] = (await manager.query(
      `UPDATE operation_entries AS e SET status = r.status, error_code = r.error_code, error_message = r.error_message
         FROM unnest($2::int[], $3::text[], $4::text[], $5::text[]) AS r (entry_index, status, error_code, error_message)
        WHERE e.operation_id = $1 AND e.entry_index = r.entry_index AND e.status IS NULL
        RETURNING e.status`,
      [
        operation.id,
        results.map((r) => r.index),
        results.map((r) => (r.error ? OperationResultStatus.Failed : OperationResultStatus.Succeeded)),
        results.map((r) => r.error?.code ?? null),
        results.map((r) => r.error?.message ?? null),
      ],
    )) as [{ status: OperationResultStatus }[], number];
    const succeeded = recorded.filter((row) => row.status === OperationResultStatus.Succeeded).length;
    operation.succeeded += succeeded;
    operation.failed += recorded.length - succeeded;
    operation.processed += recorded.length;
  }

  /** Writes the operation's status, counts and timestamps. */
  async save(manager: EntityManager, operation: OperationEntity): Promise<void> {
    const { seq: _seq, ...columns } = operation;
    await manager.update(OperationEntity, { id: operation.id }, { ...columns, version: operation.version + 1, updatedAt: new Date() });
  }

  /** Records that nothing of the operation is left to do, leaving what clients see (and its version) alone. */
  async markSettled(manager: EntityManager, id: string): Promise<void> {
    await manager.update(OperationEntity, { id }, { settled: true });
  }

  /**
   * The next operations the retention deletes: settled, finished more than `retentionDays` ago, oldest
   * first, as many as hold at most `maxEntries` entries together (always at least one).
   */
  async expiredBatch(retentionDays: number, maxEntries: number, maxOperations: number): Promise<string[]> {
    const rows: { id: string }[] = await this.operations.query(
      `SELECT id FROM (
         SELECT id, total, sum(total) OVER (ORDER BY completed_at, id) AS upto
           FROM operations
          WHERE settled AND completed_at < now() - make_interval(days => $1)
          ORDER BY completed_at, id
          LIMIT $3
       ) AS expired
       -- The oldest always goes (an operation holds at most 10000 entries), the others while they fit.
       WHERE upto <= $2 OR upto = total`,
      [retentionDays, maxEntries, maxOperations],
    );
    return rows.map((row) => row.id);
  }

  /** Deletes settled operations with their entries and results (the entries go by ON DELETE CASCADE). */
  async deleteSettled(ids: string[]): Promise<number> {
    const [, deleted] = (await this.operations.query('DELETE FROM operations WHERE id = ANY($1::uuid[]) AND settled', [ids])) as [
      unknown,
      number,
    ];
    return deleted;
  }

  /** Operations a worker has not closed yet, oldest first. */
  async unsettledIds(limit: number): Promise<string[]> {
    const rows: { id: string }[] = await this.operations.query(
      'SELECT id FROM operations WHERE NOT settled ORDER BY created_at LIMIT $1',
      [limit],
    );
    return rows.map((row) => row.id);
  }
}

/** The name of an operation's turn lock (`withLocked`, `cancel`). */
function turnOf(operationId: string): string {
  return `operation-turn:${operationId}`;
}
