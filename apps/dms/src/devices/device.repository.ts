import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type AccountScope, type DeviceFilters, DeviceStatus, type PageRequest } from '@tracking/contracts';
import { ownedBy } from '@tracking/database';
import { CursorCodec, cursorBinding, keysetJsonPage, lockInsertOrder, SqlConditions } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { DeviceEntity } from './device.entity.js';
import { ReleasedTargets } from './released-targets.js';

@Injectable()
export class DeviceRepository {
  constructor(
    @InjectRepository(DeviceEntity) private readonly devices: Repository<DeviceEntity>,
    private readonly cursors: CursorCodec,
    private readonly released: ReleasedTargets,
  ) {}

  /** Inserts under the account's insert-order lock; a serial number taken in the tenant fails on devices_tenant_serial_number_key. */
  async insert(device: Omit<DeviceEntity, 'seq'>): Promise<void> {
    await this.devices.manager.transaction(async (manager) => {
      await lockInsertOrder(manager, `devices:${device.accountId}`);
      await manager.insert(DeviceEntity, device);
    });
  }

  /**
   * One page of the account's devices as the API shows them, as JSON text: a hot read, so
   * `keysetJsonPage`'s prepared statement and each row's stored `api_json` rather than TypeORM's entities.
   */
  findPageJson(scope: AccountScope, page: PageRequest, filters: DeviceFilters): Promise<string> {
    const where = new SqlConditions().add((p) => `account_id = ${p}`, scope.accountId, 'uuid').add((p) => `tenant_id = ${p}`, scope.tenantId, 'uuid');
    if (filters.serialNumber !== undefined) where.add((p) => `serial_number = ${p}`, filters.serialNumber, 'text');
    if (filters.shipmentId !== undefined) where.add((p) => `shipment_id = ${p}`, filters.shipmentId, 'uuid');
    return keysetJsonPage({
      dataSource: this.devices.manager.connection,
      table: 'devices',
      jsonColumn: 'api_json',
      where,
      oneOf: filters.status && { column: 'status', values: filters.status, type: 'text' },
      page,
      codec: this.cursors,
      // A status list is one filter whatever its order, so its cursor binds the sorted list.
      binding: cursorBinding('devices', {
        accountId: scope.accountId,
        status: filters.status && [...filters.status].sort().join(','),
        serialNumber: filters.serialNumber,
        shipmentId: filters.shipmentId,
      }),
      itemsKey: 'devices',
    });
  }

  async findOne(scope: AccountScope, id: string): Promise<DeviceEntity | null> {
    // By primary key alone, then the owner: see `ownedBy`.
    return ownedBy(await this.devices.findOneBy({ id }), scope);
  }

  /**
   * Runs `work` in one transaction with the device locked (`FOR UPDATE`) until it returns, so that
   * concurrent writes to one device (patch, retire, delete, assign, unassign) take turns and each
   * decides on the status the one before it left.
   */
  withLockedDevice<T>(
    scope: AccountScope,
    id: string,
    work: (device: DeviceEntity | null, manager: EntityManager) => Promise<T>,
    options: { lockDeadline?: number; before?: (manager: EntityManager) => Promise<void> } = {},
  ): Promise<T> {
    return this.devices.manager.transaction(async (manager) => {
      if (options.lockDeadline !== undefined) await limitLockWaits(manager, options.lockDeadline);
      // Locks taken here come before the device row's, in the same order as `release` takes them.
      await options.before?.(manager);
      const device = await manager.findOne(DeviceEntity, {
        where: { id, accountId: scope.accountId, tenantId: scope.tenantId },
        lock: { mode: 'pessimistic_write' },
      });
      return work(device, manager);
    });
  }

  async save(manager: EntityManager, device: DeviceEntity): Promise<void> {
    const { seq: _seq, ...columns } = device;
    await manager.update(DeviceEntity, { id: device.id }, columns);
  }

  /**
   * Takes the shipment's link lock in shared mode (links to one shipment do not wait for each other)
   * and tells whether the shipment, or else the set, was released (closed or deleted) in a way that
   * refuses a link the OMS checked at `checkedAt` (`ReleasedTargets`).
   */
  async lockLinkTarget(manager: EntityManager, shipmentId: string, setId: string, checkedAt?: number): Promise<'shipment' | 'set' | null> {
    await manager.query('SELECT pg_advisory_xact_lock_shared(hashtext($1))', [`links:${shipmentId}`]);
    const refusing = await this.released.refusing(manager, [shipmentId, setId], checkedAt);
    if (refusing.has(shipmentId)) return 'shipment';
    return refusing.size > 0 ? 'set' : null;
  }

  /**
   * Unlinks every device of the shipment (or of one of its sets) in one statement, moving each one's
   * version on, and records the shipment (or set) as released so that no later link to it commits;
   * returns how many devices it freed. The shipment's link lock, taken exclusively, waits for links to it
   * that are still in flight, so their devices are released too. Nothing commits after `deadline`: locks
   * are waited for no longer (55P03), and a release that finishes later rolls back (`tooLate`).
   */
  async release(scope: AccountScope, shipmentId: string, setId: string | undefined, deadline: number, tooLate: () => Error): Promise<number> {
    return this.devices.manager.transaction(async (manager) => {
      await limitLockWaits(manager, deadline);
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`links:${shipmentId}`]);
      await this.released.record(manager, setId ?? shipmentId);
      const released = await this.unlink(manager, scope, shipmentId, setId);
      if (Date.now() > deadline) throw tooLate();
      return released;
    });
  }

  private async unlink(manager: EntityManager, scope: AccountScope, shipmentId: string, setId?: string): Promise<number> {
    const query = manager
      .createQueryBuilder()
      .update(DeviceEntity)
      .set({ status: DeviceStatus.Available, shipmentId: null, setId: null, version: () => 'version + 1', updatedAt: () => 'now()' })
      .where('account_id = :accountId AND tenant_id = :tenantId AND shipment_id = :shipmentId', {
        accountId: scope.accountId,
        tenantId: scope.tenantId,
        shipmentId,
      });
    if (setId !== undefined) query.andWhere('set_id = :setId', { setId });
    const result = await query.execute();
    return result.affected ?? 0;
  }

  /** The `[deviceId, setId]` pairs of the account's devices linked to any of `setIds`, by device id. */
  async findLinked(scope: AccountScope, setIds: string[]): Promise<{ id: string; setId: string }[]> {
    if (setIds.length === 0) return [];
    const rows: { id: string; set_id: string }[] = await this.devices.query(
      `SELECT id, set_id FROM devices
        WHERE account_id = $1 AND tenant_id = $2 AND set_id = ANY($3::uuid[])
        ORDER BY id`,
      [scope.accountId, scope.tenantId, setIds],
    );
    return rows.map((row) => ({ id: row.id, setId: row.set_id }));
  }

  /** The account's devices among `ids`, locked `FOR UPDATE` in id order (so that concurrent chunks cannot deadlock). */
  lockForChunk(manager: EntityManager, scope: AccountScope, ids: string[]): Promise<DeviceEntity[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return manager
      .createQueryBuilder(DeviceEntity, 'd')
      .where('d.id = ANY(:ids)', { ids })
      .andWhere('d.account_id = :accountId AND d.tenant_id = :tenantId', scope)
      .orderBy('d.id')
      .setLock('pessimistic_write')
      .getMany();
  }

  /** Links each device to its set, in one statement. */
  async linkAll(manager: EntityManager, links: { id: string; shipmentId: string; setId: string }[]): Promise<void> {
    if (links.length === 0) return;
    await manager.query(
      `UPDATE devices AS d
          SET status = $4, shipment_id = l.shipment_id, set_id = l.set_id, version = d.version + 1, updated_at = now()
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[]) AS l (id, shipment_id, set_id)
        WHERE d.id = l.id`,
      [links.map((l) => l.id), links.map((l) => l.shipmentId), links.map((l) => l.setId), DeviceStatus.Assigned],
    );
  }

  /** Retires the devices, in one statement. */
  async retireAll(manager: EntityManager, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await manager.query(
      `UPDATE devices SET status = $2, retired_at = now(), version = version + 1, updated_at = now()
        WHERE id = ANY($1::uuid[])`,
      [ids, DeviceStatus.Retired],
    );
  }

  async delete(manager: EntityManager, device: DeviceEntity): Promise<void> {
    await manager.delete(DeviceEntity, { id: device.id });
  }
}

/** Makes the transaction wait for locks no longer than until `deadline` (epoch ms): 55P03 when the time is up. */
async function limitLockWaits(manager: EntityManager, deadline: number): Promise<void> {
  const remaining = Math.max(1, Math.ceil(deadline - Date.now()));
  await manager.query(`SET LOCAL lock_timeout = ${remaining}`);
}
