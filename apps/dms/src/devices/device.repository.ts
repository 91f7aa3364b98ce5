import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type AccountScope, type DeviceFilters, DeviceStatus, type PageRequest } from '@tracking/contracts';
import { ownedBy } from '@tracking/database';
import { CursorCodec, cursorBinding, keysetJsonPage, lockInsertOrder, SqlConditions } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { DeviceEntity } from './device.entity.js';
import { ReleasedTargets } from './released-targets.js';

/** A device as ingest sees it, locked until the batch's transaction ends. */
export interface IngestDevice {
  id: string;
  serialNumber: string;
  retired: boolean;
}

/**
 * The common table expressions that move each device's `lastSeenAt`, `lastLocation` and `batteryLevel`
 * forward to the newest of its rows in `stored` carrying each (a relation of the rows a statement just
 * inserted into `readings`: device_id, recorded_at, lat, lng, accuracy_meters, battery_percent), each only
 * when recorded later than the value it holds: a late, older reading never moves them back. Neither
 * `updated_at` nor `version` changes (derived fields, docs/readings.md). SQL to put in the ingest's insert
 * statement (`ReadingRepository.insert`), after its `stored` CTE: the values come from the rows as
 * inserted, rather than sent a second time as eight arrays of parameters and parsed again (issue 31:
 * about a fifth of what the DMS sent PostgreSQL per reading; bench:device-gateway, BENCHMARKS.md).
 */
export function moveLastKnownFrom(stored: string): string {
  return `last_seen AS (
    SELECT device_id, max(recorded_at) AS seen_at FROM ${stored} GROUP BY device_id),
  last_located AS (
    SELECT DISTINCT ON (device_id) device_id, recorded_at, lat, lng, accuracy_meters
      FROM ${stored} WHERE lat IS NOT NULL ORDER BY device_id, recorded_at DESC),
  last_charged AS (
    SELECT DISTINCT ON (device_id) device_id, recorded_at, battery_percent
      FROM ${stored} WHERE battery_percent IS NOT NULL ORDER BY device_id, recorded_at DESC),
  moved AS (
    UPDATE devices AS d SET
      last_seen_at = GREATEST(d.last_seen_at, u.seen_at),
      last_location_lat = CASE WHEN u.location_at > coalesce(d.last_location_recorded_at, '-infinity') THEN u.lat ELSE d.last_location_lat END,
      last_location_lng = CASE WHEN u.location_at > coalesce(d.last_location_recorded_at, '-infinity') THEN u.lng ELSE d.last_location_lng END,
      last_location_accuracy_meters = CASE WHEN u.location_at > coalesce(d.last_location_recorded_at, '-infinity')
        THEN u.accuracy_meters ELSE d.last_location_accuracy_meters END,
      last_location_recorded_at = CASE WHEN u.location_at > coalesce(d.last_location_recorded_at, '-infinity')
        THEN u.location_at ELSE d.last_location_recorded_at END,
      battery_level = CASE WHEN u.battery_at > coalesce(d.battery_level_recorded_at, '-infinity') THEN u.battery ELSE d.battery_level END,
      battery_level_recorded_at = CASE WHEN u.battery_at > coalesce(d.battery_level_recorded_at, '-infinity')
        THEN u.battery_at ELSE d.battery_level_recorded_at END
     FROM (SELECT s.device_id AS id, s.seen_at, l.recorded_at AS location_at, l.lat, l.lng, l.accuracy_meters,
                  c.recorded_at AS battery_at, c.battery_percent AS battery
             FROM last_seen s LEFT JOIN last_located l USING (device_id) LEFT JOIN last_charged c USING (device_id)) AS u
    WHERE d.id = u.id
      AND (d.last_seen_at IS NULL OR u.seen_at > d.last_seen_at
        OR u.location_at > coalesce(d.last_location_recorded_at, '-infinity')
        OR u.battery_at > coalesce(d.battery_level_recorded_at, '-infinity')))`;
}

@Injectable()
export class DeviceRepository {
  constructor(
    @InjectRepository(DeviceEntity) private readonly devices: Repository<DeviceEntity>,
    private readonly cursors: CursorCodec,
    private readonly released: ReleasedTargets,
  ) {}

  /**
   * Inserts under the account's insert-order lock, then runs `inserted` (which records the event) in the
   * same transaction; a serial number taken in the tenant fails on devices_tenant_serial_number_key.
   */
  async insert(device: Omit<DeviceEntity, 'seq'>, inserted: (manager: EntityManager) => Promise<unknown>): Promise<void> {
    await this.devices.manager.transaction(async (manager) => {
      await lockInsertOrder(manager, `devices:${device.accountId}`);
      await manager.insert(DeviceEntity, device);
      await inserted(manager);
    });
  }

  /**
   * One page of the account's devices as the API shows them, as the bytes of its JSON text: a hot read, so
   * `keysetJsonPage`'s prepared statement and each row's stored `api_json` rather than TypeORM's entities.
   */
  findPageJson(scope: AccountScope, page: PageRequest, filters: DeviceFilters): Promise<Buffer> {
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
   * returns how many devices it freed, after `released` has run in the same transaction with each freed
   * device and the set it was in (to record their events). The shipment's link lock, taken exclusively,
   * waits for links to it that are still in flight, so their devices are released too. Nothing commits
   * after `deadline`: locks are waited for no longer (55P03), and a release that finishes later rolls
   * back (`tooLate`).
   */
  async release(
    scope: AccountScope,
    shipmentId: string,
    setId: string | undefined,
    deadline: number,
    tooLate: () => Error,
    released: (manager: EntityManager, unlinked: { id: string; setId: string }[]) => Promise<unknown>,
  ): Promise<number> {
    return this.devices.manager.transaction(async (manager) => {
      await limitLockWaits(manager, deadline);
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`links:${shipmentId}`]);
      await this.released.record(manager, setId ?? shipmentId);
      const unlinked = await this.unlink(manager, scope, shipmentId, setId);
      await released(manager, unlinked);
      if (Date.now() > deadline) throw tooLate();
      return unlinked.length;
    });
  }

  /** Unlinks the devices in one statement; returns each one's id and the set it was in, by device id. */
  private async unlink(manager: EntityManager, scope: AccountScope, shipmentId: string, setId?: string): Promise<{ id: string; setId: string }[]> {
    // The locking read gives each device's set before the update (RETURNING shows only the new one).
    const [rows] = (await manager.query(
      `WITH linked AS (
         SELECT id, set_id FROM devices
          WHERE account_id = $1 AND tenant_id = $2 AND shipment_id = $3 AND ($5::uuid IS NULL OR set_id = $5)
          ORDER BY id
          FOR UPDATE
       )
       UPDATE devices AS d
          SET status = $4, shipment_id = NULL, set_id = NULL, version = d.version + 1, updated_at = now()
         FROM linked
        WHERE d.id = linked.id
        RETURNING d.id, linked.set_id`,
      [scope.accountId, scope.tenantId, shipmentId, DeviceStatus.Available, setId ?? null],
    )) as [{ id: string; set_id: string }[], number];
    return rows.map((row) => ({ id: row.id, setId: row.set_id })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
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

  /** Retires the devices at `at` (their `retiredAt` and `updatedAt`), in one statement. */
  async retireAll(manager: EntityManager, ids: string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await manager.query(
      `UPDATE devices SET status = $2, retired_at = $3, version = version + 1, updated_at = $3
        WHERE id = ANY($1::uuid[])`,
      [ids, DeviceStatus.Retired, at],
    );
  }

  /**
   * The account's devices named by id or serial number, locked in id order (`FOR NO KEY UPDATE`, so
   * concurrent batches cannot deadlock). The lock is the devices' insert-order lock for readings: a
   * device's readings take their `seq` while its row is locked, so `seq` order is commit order per device
   * (keyset paging, rule 3), and a retire waits for the batch (or the batch sees the device retired).
   */
  async lockForReadings(manager: EntityManager, scope: AccountScope, ids: string[], serialNumbers: string[]): Promise<IngestDevice[]> {
    // Serial numbers to ids first (devices_tenant_serial_number_key), then one locking read by primary key:
    // an OR of both in one statement could plan as a scan of the account.
    const named: { id: string }[] =
      serialNumbers.length === 0
        ? []
        : await manager.query('SELECT id FROM devices WHERE tenant_id = $1 AND serial_number = ANY($2::text[]) AND account_id = $3', [
            scope.tenantId,
            serialNumbers,
            scope.accountId,
          ]);
    const rows: { id: string; serial_number: string; status: string }[] = await manager.query(
      `SELECT id, serial_number, status FROM devices
        WHERE id = ANY($1::uuid[]) AND tenant_id = $2 AND account_id = $3
        ORDER BY id FOR NO KEY UPDATE`,
      [[...new Set([...ids, ...named.map((row) => row.id)])], scope.tenantId, scope.accountId],
    );
    return rows.map((row) => ({ id: row.id, serialNumber: row.serial_number, retired: row.status === 'Retired' }));
  }

  /**
   * The devices of these credentials, locked as `lockForReadings` locks them (`FOR NO KEY UPDATE`, in id
   * order across accounts: the same global order as `lockForReadings`, whose devices are a subset of one
   * account), with the credentials check in the same statement: by credential id, its device as locked,
   * for each credential that exists and whose device exists. The device gateway's batches take this
   * instead of `liveCredentials` and a `lockForReadings` per account (issue 31: one statement where there
   * were one plus one per account). The credentials are not locked: a device's delete locks the device,
   * then (cascading) its credentials, and the two orders would deadlock; a credential deleted while the
   * batch runs lets that one batch through. A device retired or deleted while the statement waited for
   * its lock is seen as it is now (retired, or absent).
   */
  async lockForSubmissions(manager: EntityManager, credentialIds: string[]): Promise<Map<string, IngestDevice & AccountScope>> {
    if (credentialIds.length === 0) return new Map();
    const rows: { credential_id: string; id: string; serial_number: string; status: string; tenant_id: string; account_id: string }[] = await manager.query(
      `SELECT c.id AS credential_id, d.id, d.serial_number, d.status, d.tenant_id, d.account_id
         FROM devices d JOIN device_credentials c ON c.device_id = d.id
        WHERE c.id = ANY($1::uuid[])
        ORDER BY d.id FOR NO KEY UPDATE OF d`,
      [credentialIds],
    );
    return new Map(
      rows.map((row) => [
        row.credential_id,
        { id: row.id, serialNumber: row.serial_number, retired: row.status === DeviceStatus.Retired, tenantId: row.tenant_id, accountId: row.account_id },
      ]),
    );
  }

  /**
   * The device a credential change acts on, locked `FOR KEY SHARE` in `manager`'s transaction (it cannot
   * be deleted meanwhile; a retire may go on), or null when the account has no such device.
   */
  async lockForCredentials(manager: EntityManager, scope: AccountScope, id: string): Promise<{ id: string; retired: boolean } | null> {
    const rows: { id: string; status: string }[] = await manager.query(
      'SELECT id, status FROM devices WHERE id = $1 AND account_id = $2 AND tenant_id = $3 FOR KEY SHARE',
      [id, scope.accountId, scope.tenantId],
    );
    const row = rows[0];
    return row ? { id: row.id, retired: row.status === DeviceStatus.Retired } : null;
  }

  /**
   * Credentials whose device exists and is not retired: those of `protocol` matching `column = value`
   * (`identifier`, or `secret_digest` for HTTP), or, with `ids`, those among them. In `manager`'s
   * transaction when given, without locking (docs/device-gateway.md, "Revocation").
   */
  async liveCredentials(
    where: { protocol: string; column: 'identifier' | 'secret_digest'; value: string | Buffer } | { ids: string[] },
    manager: EntityManager = this.devices.manager,
  ): Promise<{ id: string; device_id: string; tenant_id: string; account_id: string; identifier: string; secret_digest: Buffer | null }[]> {
    const [condition, parameters] =
      'ids' in where ? ['c.id = ANY($1::uuid[])', [where.ids]] : [`c.protocol = $2 AND c.${where.column} = $1`, [where.value, where.protocol]];
    return manager.query(
      `SELECT c.id, c.device_id, c.tenant_id, c.account_id, c.identifier, c.secret_digest
         FROM device_credentials c JOIN devices d ON d.id = c.device_id
        WHERE ${condition} AND d.status <> '${DeviceStatus.Retired}'`,
      parameters,
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
