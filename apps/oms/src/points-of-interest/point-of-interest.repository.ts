import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { AccountScope, PageRequest } from '@tracking/contracts';
import { ownedBy } from '@tracking/database';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { PointOfInterestEntity } from './point-of-interest.entity.js';

@Injectable()
export class PointOfInterestRepository {
  constructor(
    @InjectRepository(PointOfInterestEntity) private readonly pointsOfInterest: Repository<PointOfInterestEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  async insert(pointOfInterest: Omit<PointOfInterestEntity, 'seq'>): Promise<void> {
    await this.pointsOfInterest.manager.transaction(async (manager) => {
      await lockInsertOrder(manager, `points-of-interest:${pointOfInterest.accountId}`);
      await manager.insert(PointOfInterestEntity, pointOfInterest);
    });
  }

  findPage(scope: AccountScope, page: PageRequest): Promise<KeysetPage<PointOfInterestEntity>> {
    const query = this.pointsOfInterest
      .createQueryBuilder('p')
      .where('p.account_id = :accountId', { accountId: scope.accountId })
      .andWhere('p.tenant_id = :tenantId', { tenantId: scope.tenantId });
    return keysetPage(query, {
      seqColumn: 'p.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      binding: cursorBinding('points-of-interest', { accountId: scope.accountId }),
    });
  }

  /**
   * What changes whenever the account's places change, for the evaluation's cache of places: the account's
   * row of `points_of_interest_versions`, which triggers give a new value from one sequence in the
   * transaction of every statement that inserts, updates or deletes its places (migration
   * VersionPlacesPerAccount1763800034000). One primary-key lookup; an account without a row has had no
   * places since that migration, and its first change makes the row.
   */
  async placesVersion(scope: AccountScope): Promise<string> {
    const [row]: { version: string }[] = await this.pointsOfInterest.query(
      'SELECT version FROM points_of_interest_versions WHERE tenant_id = $1 AND account_id = $2',
      [scope.tenantId, scope.accountId],
    );
    return row?.version ?? 'none';
  }

  /** Every place of the account as the evaluation needs it (a circle and its dwell time). */
  async findPlaces(scope: AccountScope): Promise<{ id: string; lat: number; lng: number; radiusMeters: number; dwellSeconds: number }[]> {
    const rows: { id: string; lat: number; lng: number; radius_meters: number; dwell_seconds: number }[] = await this.pointsOfInterest.query(
      'SELECT id, lat, lng, radius_meters, dwell_seconds FROM points_of_interest WHERE tenant_id = $1 AND account_id = $2',
      [scope.tenantId, scope.accountId],
    );
    return rows.map((row) => ({ id: row.id, lat: row.lat, lng: row.lng, radiusMeters: row.radius_meters, dwellSeconds: row.dwell_seconds }));
  }

  async findOne(scope: AccountScope, id: string): Promise<PointOfInterestEntity | null> {
    // By primary key alone, then the owner: see `ownedBy`.
    return ownedBy(await this.pointsOfInterest.findOneBy({ id }), scope);
  }

  /**
   * Runs `work` in one transaction with the point of interest locked (`FOR UPDATE`) until it returns.
   * The lock also conflicts with the key-share lock that the foreign keys of `shipments` take, so no
   * shipment can start referring to the point of interest while `work` decides about it.
   */
  withLockedPointOfInterest<T>(
    scope: AccountScope,
    id: string,
    work: (pointOfInterest: PointOfInterestEntity | null, manager: EntityManager) => Promise<T>,
  ): Promise<T> {
    return this.pointsOfInterest.manager.transaction(async (manager) => {
      const pointOfInterest = await manager.findOne(PointOfInterestEntity, {
        where: { id, accountId: scope.accountId, tenantId: scope.tenantId },
        lock: { mode: 'pessimistic_write' },
      });
      return work(pointOfInterest, manager);
    });
  }

  async save(manager: EntityManager, pointOfInterest: PointOfInterestEntity): Promise<void> {
    const { seq: _seq, ...columns } = pointOfInterest;
    await manager.update(PointOfInterestEntity, { id: pointOfInterest.id }, columns);
  }

  async delete(manager: EntityManager, pointOfInterest: PointOfInterestEntity): Promise<void> {
    await manager.delete(PointOfInterestEntity, { id: pointOfInterest.id });
  }
}
