import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { PageRequest, ShipmentScope, ShipmentStatus } from '@tracking/contracts';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { validate as isUuid } from 'uuid';
import { SetEntity } from './set.entity.js';

/** How a write locks the row it reads, from weakest: keep it from being deleted, from being changed, from both. */
export type RowLock = 'for_key_share' | 'for_no_key_update' | 'pessimistic_write';

const SHIPMENT_STATUS = 'SELECT status FROM shipments WHERE id = $1 AND account_id = $2 AND tenant_id = $3';
/** Conflicts with the `FOR UPDATE` of the shipment's lifecycle transitions and deletes, not with itself. */
const SHIPMENT_STATUS_FOR_SHARE = `${SHIPMENT_STATUS} FOR SHARE`;

@Injectable()
export class SetRepository {
  constructor(
    @InjectRepository(SetEntity) private readonly sets: Repository<SetEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  /** The status of the account's shipment; null when the account has no such shipment. */
  findShipmentStatus(scope: ShipmentScope): Promise<ShipmentStatus | null> {
    return shipmentStatus(this.sets.manager, SHIPMENT_STATUS, scope);
  }

  /**
   * Runs `work` in one transaction that first locks the account's shipment `FOR SHARE` and passes its
   * status (null: no such shipment). Lifecycle transitions and deletes lock the shipment `FOR UPDATE`,
   * so they wait until `work` has committed, and a transition that committed first is the status seen:
   * the status stays true while `work` writes. Writers of sets and items share the lock.
   */
  withShipmentLockedForShare<T>(
    scope: ShipmentScope,
    work: (status: ShipmentStatus | null, manager: EntityManager) => Promise<T>,
  ): Promise<T> {
    return this.sets.manager.transaction(async (manager) =>
      work(await shipmentStatus(manager, SHIPMENT_STATUS_FOR_SHARE, scope), manager),
    );
  }

  async insert(manager: EntityManager, set: Omit<SetEntity, 'seq'>): Promise<void> {
    await lockInsertOrder(manager, `sets:${set.shipmentId}`);
    await manager.insert(SetEntity, set);
  }

  findPage(shipmentId: string, page: PageRequest): Promise<KeysetPage<SetEntity>> {
    const query = this.sets.createQueryBuilder('s').where('s.shipment_id = :shipmentId', { shipmentId });
    return keysetPage(query, {
      seqColumn: 's.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      binding: cursorBinding('sets', { shipmentId }),
    });
  }

  /** The shipment's set, locked with `lock` until the transaction of `manager` ends; null when there is none. */
  findOne(shipmentId: string, setId: string, manager: EntityManager = this.sets.manager, lock?: RowLock): Promise<SetEntity | null> {
    // A path id that is not a UUID names no set; the gateway leaves it to us to answer after the shipment's 404.
    if (!isUuid(setId)) return Promise.resolve(null);
    return manager.findOne(SetEntity, { where: { id: setId, shipmentId }, ...(lock && { lock: { mode: lock } }) });
  }

  async save(manager: EntityManager, set: SetEntity): Promise<void> {
    const { seq: _seq, ...columns } = set;
    await manager.update(SetEntity, { id: set.id }, columns);
  }

  /** Deletes the set; its items go with it (ON DELETE CASCADE). */
  async delete(manager: EntityManager, set: SetEntity): Promise<void> {
    await manager.delete(SetEntity, { id: set.id });
  }
}

async function shipmentStatus(manager: EntityManager, sql: string, scope: ShipmentScope): Promise<ShipmentStatus | null> {
  if (!isUuid(scope.shipmentId)) return null;
  const rows: { status: ShipmentStatus }[] = await manager.query(sql, [scope.shipmentId, scope.accountId, scope.tenantId]);
  return rows[0]?.status ?? null;
}
