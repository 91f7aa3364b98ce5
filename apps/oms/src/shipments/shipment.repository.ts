import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { AccountScope, PageRequest, ShipmentFilters } from '@tracking/contracts';
import { batchedRows } from '@tracking/database';
import { CursorCodec, cursorBinding, keysetJsonPage, lockInsertOrder, SqlConditions } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { ShipmentEntity } from './shipment.entity.js';

@Injectable()
export class ShipmentRepository {
  constructor(
    @InjectRepository(ShipmentEntity) private readonly shipments: Repository<ShipmentEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  /**
   * Inserts the shipment in one transaction after `prepare`, which may check and lock what it refers to
   * and complete it. The insert-order lock is taken last, so it is held no longer than needed.
   */
  async insert(shipment: Omit<ShipmentEntity, 'seq'>, prepare: (manager: EntityManager) => Promise<void>): Promise<void> {
    await this.shipments.manager.transaction(async (manager) => {
      await prepare(manager);
      await lockInsertOrder(manager, `shipments:${shipment.accountId}`);
      await manager.insert(ShipmentEntity, shipment);
    });
  }

  /**
   * One page of the account's shipments as the API shows them, as JSON text: the hottest read of the API,
   * so `keysetJsonPage`'s prepared statement and each row's stored `api_json` rather than TypeORM's entities.
   */
  findPageJson(scope: AccountScope, page: PageRequest, filters: ShipmentFilters): Promise<string> {
    const where = new SqlConditions().add((p) => `account_id = ${p}`, scope.accountId, 'uuid').add((p) => `tenant_id = ${p}`, scope.tenantId, 'uuid');
    if (filters.reference !== undefined) where.add((p) => `reference = ${p}`, filters.reference, 'text');
    // Containment rather than `= ANY(tags)`, so that the GIN index on tags serves it.
    if (filters.tag !== undefined) where.add((p) => `tags @> ARRAY[${p}]::text[]`, filters.tag, 'text');
    return keysetJsonPage({
      dataSource: this.shipments.manager.connection,
      table: 'shipments',
      jsonColumn: 'api_json',
      where,
      oneOf: filters.status && { column: 'status', values: filters.status, type: 'text' },
      page,
      codec: this.cursors,
      // A status list is one filter whatever its order, so its cursor binds the sorted list.
      binding: cursorBinding('shipments', {
        accountId: scope.accountId,
        status: filters.status && [...filters.status].sort().join(','),
        reference: filters.reference,
        tag: filters.tag,
      }),
      itemsKey: 'items',
    });
  }

  /**
   * The shipment as the API shows it, as JSON text, with its version; null when the account has no such
   * shipment. A hot read, so a prepared statement (shared by the reads of one turn) and the stored
   * `api_json`, as the list.
   */
  async findOneJson(scope: AccountScope, id: string): Promise<{ json: string; version: number } | null> {
    const [row] = await batchedRows<[json: string, version: number]>(
      this.shipments.manager.connection,
      'SELECT api_json, version FROM shipments WHERE id = $1 AND account_id = $2 AND tenant_id = $3',
      ['uuid', 'uuid', 'uuid'],
      [id, scope.accountId, scope.tenantId],
    );
    return row ? { json: row[0], version: row[1] } : null;
  }

  /** Runs `work` with the shipment locked against concurrent changes until it returns. */
  withLockedShipment<T>(
    scope: AccountScope,
    id: string,
    work: (shipment: ShipmentEntity | null, manager: EntityManager) => Promise<T>,
  ): Promise<T> {
    return this.shipments.manager.transaction(async (manager) => {
      const shipment = await manager.findOne(ShipmentEntity, {
        where: { id, accountId: scope.accountId, tenantId: scope.tenantId },
        lock: { mode: 'pessimistic_write' },
      });
      return work(shipment, manager);
    });
  }

  /**
   * Which of `ids` are points of interest of the account, locked `FOR SHARE` until the transaction
   * ends: a concurrent delete of one (which locks it `FOR UPDATE`) then waits for this shipment and
   * sees it, or has already removed it and this shipment is refused.
   */
  async lockPointsOfInterest(manager: EntityManager, scope: AccountScope, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows: { id: string }[] = await manager.query(
      `SELECT id FROM points_of_interest
        WHERE id = ANY($1::uuid[]) AND account_id = $2 AND tenant_id = $3
        ORDER BY id
        FOR SHARE`,
      [ids, scope.accountId, scope.tenantId],
    );
    return new Set(rows.map((row) => row.id));
  }

  async save(manager: EntityManager, shipment: ShipmentEntity): Promise<void> {
    const { seq: _seq, ...columns } = shipment;
    await manager.update(ShipmentEntity, { id: shipment.id }, columns);
  }

  async delete(manager: EntityManager, shipment: ShipmentEntity): Promise<void> {
    await manager.delete(ShipmentEntity, { id: shipment.id });
  }
}
