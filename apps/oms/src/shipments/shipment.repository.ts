import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { AccountScope, PageRequest } from '@tracking/contracts';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { ShipmentEntity } from './shipment.entity.js';

@Injectable()
export class ShipmentRepository {
  constructor(
    @InjectRepository(ShipmentEntity) private readonly shipments: Repository<ShipmentEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  async insert(shipment: Omit<ShipmentEntity, 'seq'>): Promise<void> {
    await this.shipments.manager.transaction(async (manager) => {
      await lockInsertOrder(manager, `shipments:${shipment.accountId}`);
      await manager.insert(ShipmentEntity, shipment);
    });
  }

  findPage(scope: AccountScope, page: PageRequest): Promise<KeysetPage<ShipmentEntity>> {
    const query = this.shipments
      .createQueryBuilder('s')
      .where('s.account_id = :accountId', { accountId: scope.accountId })
      .andWhere('s.tenant_id = :tenantId', { tenantId: scope.tenantId });
    return keysetPage(query, {
      seqColumn: 's.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      binding: cursorBinding('shipments', { accountId: scope.accountId }),
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

  async save(manager: EntityManager, shipment: ShipmentEntity): Promise<void> {
    const { seq: _seq, ...columns } = shipment;
    await manager.update(ShipmentEntity, { id: shipment.id }, columns);
  }
}
