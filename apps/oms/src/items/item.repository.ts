import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { PageRequest } from '@tracking/contracts';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { validate as isUuid } from 'uuid';
import type { SetEntity } from '../sets/set.entity.js';
import type { RowLock } from '../sets/set.repository.js';
import { ItemEntity } from './item.entity.js';

@Injectable()
export class ItemRepository {
  constructor(
    @InjectRepository(ItemEntity) private readonly items: Repository<ItemEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  async insert(manager: EntityManager, item: Omit<ItemEntity, 'seq'>): Promise<void> {
    await lockInsertOrder(manager, `items:${item.setId}`);
    await manager.insert(ItemEntity, item);
  }

  findPage(set: Pick<SetEntity, 'id' | 'shipmentId'>, page: PageRequest): Promise<KeysetPage<ItemEntity>> {
    const query = this.items.createQueryBuilder('i').where('i.set_id = :setId', { setId: set.id });
    return keysetPage(query, {
      seqColumn: 'i.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      binding: cursorBinding('items', { shipmentId: set.shipmentId, setId: set.id }),
    });
  }

  /** The set's item, locked with `lock` until the transaction of `manager` ends; null when there is none. */
  findOne(setId: string, itemId: string, manager: EntityManager = this.items.manager, lock?: RowLock): Promise<ItemEntity | null> {
    // A path id that is not a UUID names no item; the gateway leaves it to us to answer after the set's 404.
    if (!isUuid(itemId)) return Promise.resolve(null);
    return manager.findOne(ItemEntity, { where: { id: itemId, setId }, ...(lock && { lock: { mode: lock } }) });
  }

  async save(manager: EntityManager, item: ItemEntity): Promise<void> {
    const { seq: _seq, ...columns } = item;
    await manager.update(ItemEntity, { id: item.id }, columns);
  }

  async delete(manager: EntityManager, item: ItemEntity): Promise<void> {
    await manager.delete(ItemEntity, { id: item.id });
  }
}
