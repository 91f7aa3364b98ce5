import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { PageRequest } from '@tracking/contracts';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { validate as isUuid } from 'uuid';
import { SetEntity } from './set.entity.js';

/** How a write locks the row it reads, from weakest: keep it from being deleted, from being changed, from both. */
export type RowLock = 'for_key_share' | 'for_no_key_update' | 'pessimistic_write';

@Injectable()
export class SetRepository {
  constructor(
    @InjectRepository(SetEntity) private readonly sets: Repository<SetEntity>,
    private readonly cursors: CursorCodec,
  ) {}

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
