import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { PageRequest, ShipmentScope } from '@tracking/contracts';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { VisitEntity } from './visit.entity.js';

/** Every statement on the `visits` table. */
@Injectable()
export class VisitRepository {
  constructor(
    @InjectRepository(VisitEntity) private readonly visits: Repository<VisitEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  /**
   * Inserts the visit in the caller's transaction unless the shipment already has a visit of that place
   * with that `arrivedAt` (the unique key `visits_arrival_key`); returns whether it inserted.
   */
  async insert(manager: EntityManager, visit: Omit<VisitEntity, 'seq'>): Promise<boolean> {
    await lockInsertOrder(manager, `visits:${visit.shipmentId}`);
    const rows = (await manager.query(
      `INSERT INTO visits (id, tenant_id, account_id, shipment_id, poi_id, arrived_at, departed_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (shipment_id, poi_id, arrived_at) DO NOTHING
       RETURNING id`,
      [visit.id, visit.tenantId, visit.accountId, visit.shipmentId, visit.poiId, visit.arrivedAt, visit.departedAt, visit.createdAt, visit.updatedAt],
    )) as unknown[];
    return rows.length === 1;
  }

  /**
   * Sets `departedAt` of the visit that arrived at `arrivedAt`, unless it is set (a departure is recorded
   * once and never moved); returns whether it set it.
   */
  async depart(manager: EntityManager, key: { shipmentId: string; poiId: string; arrivedAt: Date }, departedAt: Date, at: Date): Promise<boolean> {
    const [rows] = (await manager.query(
      `UPDATE visits SET departed_at = $4, updated_at = $5
        WHERE shipment_id = $1 AND poi_id = $2 AND arrived_at = $3 AND departed_at IS NULL
        RETURNING id`,
      [key.shipmentId, key.poiId, key.arrivedAt, departedAt, at],
    )) as [unknown[], number];
    return rows.length === 1;
  }

  /** One page of the shipment's visits, in the order they were recorded. */
  findPage(scope: ShipmentScope, page: PageRequest): Promise<KeysetPage<VisitEntity>> {
    const query = this.visits
      .createQueryBuilder('v')
      .where('v.shipment_id = :shipmentId', { shipmentId: scope.shipmentId })
      .andWhere('v.account_id = :accountId', { accountId: scope.accountId })
      .andWhere('v.tenant_id = :tenantId', { tenantId: scope.tenantId });
    return keysetPage(query, {
      seqColumn: 'v.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      binding: cursorBinding('visits', { accountId: scope.accountId, shipmentId: scope.shipmentId.toLowerCase() }),
    });
  }
}
