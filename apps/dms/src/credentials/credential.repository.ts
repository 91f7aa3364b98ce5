import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { AccountScope, CredentialProtocol, PageRequest } from '@tracking/contracts';
import { CursorCodec, cursorBinding, type KeysetPage, keysetPage, lockInsertOrder } from '@tracking/paging';
import { entryBound } from '@tracking/core';
import { LRUCache } from 'lru-cache';
import type { EntityManager, Repository } from 'typeorm';
import { DeviceRepository } from '../devices/device.repository.js';
import { CredentialEntity } from './credential.entity.js';

/** The device a credential change acts on, as the change's transaction sees it (key-share locked). */
export interface CredentialOwner {
  id: string;
  retired: boolean;
}

/** A credential that may authenticate: its device exists and is not retired. */
export interface LiveCredential {
  id: string;
  deviceId: string;
  tenantId: string;
  accountId: string;
  identifier: string;
  secretDigest: Buffer | null;
}

/** A credential's use is recorded at most this often. */
const TOUCH_INTERVAL_MS = 60_000;

@Injectable()
export class CredentialRepository {
  /**
   * The credentials whose use this replica recorded within TOUCH_INTERVAL_MS: their uses until then need
   * no statement. Every batch of the device gateway touches its credentials after its commit, and that
   * UPDATE (which finds nothing to change almost always) was a round trip to PostgreSQL before each answer.
   */
  private readonly touched = new LRUCache<string, true>({ ...entryBound(100_000), ttl: TOUCH_INTERVAL_MS });

  constructor(
    @InjectRepository(CredentialEntity) private readonly credentials: Repository<CredentialEntity>,
    private readonly cursors: CursorCodec,
    private readonly devices: DeviceRepository,
  ) {}

  /**
   * Runs `work` in one transaction holding the device's credential lock (creates and deletes of one
   * device's credentials take turns, so the count each create sees is exact, and `seq` order is commit
   * order for paging) and the device row locked `FOR KEY SHARE` (it cannot be deleted meanwhile);
   * `owner` is null when the account has no such device.
   */
  withDeviceCredentials<T>(
    scope: AccountScope,
    deviceId: string,
    work: (owner: CredentialOwner | null, manager: EntityManager) => Promise<T>,
  ): Promise<T> {
    return this.credentials.manager.transaction(async (manager) => {
      await lockInsertOrder(manager, `credentials:${deviceId}`);
      return work(await this.devices.lockForCredentials(manager, scope, deviceId), manager);
    });
  }

  countOf(manager: EntityManager, deviceId: string): Promise<number> {
    return manager.countBy(CredentialEntity, { deviceId });
  }

  /**
   * The device that holds `identifier` for `protocol`, if any, read under a transaction lock on the
   * identifier: concurrent creates of one identifier for two devices take turns, so only the first wins.
   */
  async identifierHolder(manager: EntityManager, protocol: CredentialProtocol, identifier: string): Promise<string | null> {
    await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`credential-identifier:${protocol}:${identifier}`]);
    const rows: { device_id: string }[] = await manager.query(
      'SELECT device_id FROM device_credentials WHERE protocol = $1 AND identifier = $2 LIMIT 1',
      [protocol, identifier],
    );
    return rows[0]?.device_id ?? null;
  }

  async insert(manager: EntityManager, credential: Omit<CredentialEntity, 'seq'>): Promise<void> {
    await manager.insert(CredentialEntity, credential);
  }

  /** Deletes the device's credential; false when the device has none with this id. */
  async delete(manager: EntityManager, deviceId: string, credentialId: string): Promise<boolean> {
    const result = await manager.delete(CredentialEntity, { id: credentialId, deviceId });
    return (result.affected ?? 0) > 0;
  }

  findPage(deviceId: string, scope: AccountScope, page: PageRequest): Promise<KeysetPage<CredentialEntity>> {
    const query = this.credentials
      .createQueryBuilder('c')
      .where('c.device_id = :deviceId', { deviceId })
      .andWhere('c.account_id = :accountId AND c.tenant_id = :tenantId', scope);
    return keysetPage(query, {
      seqColumn: 'c.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      binding: cursorBinding('credentials', { accountId: scope.accountId, deviceId }),
    });
  }

  /**
   * The credentials of `protocol` with `identifier` whose device is not retired (at most 5: one device
   * holds an identifier), or, with `digest`, the one credential of `protocol` with that secret digest.
   */
  async findLive(protocol: CredentialProtocol, by: { identifier: string } | { digest: Buffer }): Promise<LiveCredential[]> {
    const rows = await this.devices.liveCredentials(
      'digest' in by ? { protocol, column: 'secret_digest', value: by.digest } : { protocol, column: 'identifier', value: by.identifier },
    );
    return rows.map((row) => ({
      id: row.id,
      deviceId: row.device_id,
      tenantId: row.tenant_id,
      accountId: row.account_id,
      identifier: row.identifier,
      secretDigest: row.secret_digest,
    }));
  }

  /**
   * Records a use, at most once a minute per credential: a tracker reporting every second must not
   * turn every request into a row update.
   */
  async touch(ids: string[]): Promise<void> {
    const due = ids.filter((id) => !this.touched.has(id));
    if (due.length === 0) return;
    // The condition keeps the once-a-minute rule across replicas; the cache only spares this one the statement.
    await this.credentials.query(
      `UPDATE device_credentials SET last_used_at = now()
        WHERE id = ANY($1::uuid[]) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
      [due],
    );
    for (const id of due) this.touched.set(id, true);
  }

  /**
   * Which of `ids` are live (the credential exists, its device is not retired): the device gateway's
   * liveness question. Its batches of readings check their credentials with their devices' lock instead
   * (`DeviceRepository.lockForSubmissions`).
   */
  async liveAmong(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.devices.liveCredentials({ ids });
    return new Set(rows.map((row) => row.id));
  }
}
