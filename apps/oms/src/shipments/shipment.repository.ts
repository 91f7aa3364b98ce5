import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { AccountScope, PageRequest, ShipmentFilters } from '@tracking/contracts';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
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

  findPage(scope: AccountScope, page: PageRequest, filters: ShipmentFilters): Promise<KeysetPage<ShipmentEntity>> {
    const query = this.shipments
      .createQueryBuilder('s')
      .where('s.account_id = :accountId', { accountId: scope.accountId })
      .andWhere('s.tenant_id = :tenantId', { tenantId: scope.tenantId });
    if (filters.status !== undefined) query.andWhere('s.status = ANY(:statuses)', { statuses: filters.status });
    if (filters.reference !== undefined) query.andWhere('s.reference = :reference', { reference: filters.reference });
    // Containment rather than `= ANY(tags)`, so that the GIN index on tags serves it.
    if (filters.tag !== undefined) query.andWhere('s.tags @> ARRAY[:tag]::text[]', { tag: filters.tag });
    return keysetPage(query, {
      seqColumn: 's.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      // A status list is one filter whatever its order, so its cursor binds the sorted list.
      binding: cursorBinding('shipments', {
        accountId: scope.accountId,
        status: filters.status && [...filters.status].sort().join(','),
        reference: filters.reference,
        tag: filters.tag,
      }),
    });
  }

  findOne(scope: AccountScope, id: string): Promise<ShipmentEntity | null> {
    return this.shipments.findOneBy({ id, accountId: scope.accountId, tenantId: scope.tenantId });
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
