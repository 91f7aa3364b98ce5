import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type AccountScope, type AlertFilters, type AlertKind, AlertStatus, type PageRequest } from '@tracking/contracts';
import { ownedBy } from '@tracking/database';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { validate as isUuid } from 'uuid';
import { AlertEntity } from './alert.entity.js';

const COLUMNS = `id, seq, tenant_id, account_id, shipment_id, device_id, kind, status, started_at, ended_at, threshold,
  peak_value, acknowledged_at, created_at, updated_at`;

/** Which open alerts of a shipment: all, those of one device (`deviceId`), or one (`deviceId` and `kind`). */
export interface OpenAlertSelection {
  shipmentId: string;
  /** A device, or null for the shipment-wide alerts (SignalLoss); undefined: every device and none. */
  deviceId?: string | null;
  kind?: AlertKind;
}

/** Every statement on the `alerts` table. */
@Injectable()
export class AlertRepository {
  constructor(
    @InjectRepository(AlertEntity) private readonly alerts: Repository<AlertEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  /**
   * Inserts `alert` (status Open) in the caller's transaction unless the shipment already has an open alert
   * of that device and kind, or an alert of that excursion (same `startedAt`): the unique indexes decide,
   * also between replicas. Returns the row inserted, or null when one of those existed.
   */
  async insertOpen(manager: EntityManager, alert: Omit<AlertEntity, 'seq'>): Promise<AlertEntity | null> {
    await lockInsertOrder(manager, `alerts:${alert.accountId}`);
    const rows = (await manager.query(
      `INSERT INTO alerts (id, tenant_id, account_id, shipment_id, device_id, kind, status, started_at, ended_at, threshold,
                           peak_value, acknowledged_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
       ON CONFLICT DO NOTHING
       RETURNING ${COLUMNS}`,
      [
        alert.id,
        alert.tenantId,
        alert.accountId,
        alert.shipmentId,
        alert.deviceId,
        alert.kind,
        alert.status,
        alert.startedAt,
        alert.endedAt,
        alert.threshold,
        alert.peakValue,
        alert.acknowledgedAt,
        alert.createdAt,
        alert.updatedAt,
      ],
    )) as Row[];
    return rows[0] ? fromRow(rows[0]) : null;
  }

  /**
   * How many alerts the shipment opened since `since`, counted up to `limit`; taken under the account's
   * insert-order lock (the one `insertOpen` takes), so that the count and the insert that follows are not
   * raced by another replica.
   */
  async countOpenedSince(manager: EntityManager, key: { accountId: string; shipmentId: string }, since: Date, limit: number): Promise<number> {
    await lockInsertOrder(manager, `alerts:${key.accountId}`);
    const rows = (await manager.query(
      'SELECT count(*)::int AS n FROM (SELECT 1 FROM alerts WHERE shipment_id = $1 AND created_at >= $2 LIMIT $3) AS opened',
      [key.shipmentId, since, limit],
    )) as { n: number }[];
    return rows[0]?.n ?? 0;
  }

  /**
   * Records that the shipment had an alert suppressed in the hour starting at `windowStart`; true when
   * it is the hour's first (the caller publishes `alert.suppressed` then). The shipment's rows of earlier
   * hours are deleted on the way.
   */
  async recordSuppression(manager: EntityManager, key: { tenantId: string; accountId: string; shipmentId: string }, windowStart: Date, at: Date): Promise<boolean> {
    await manager.query('DELETE FROM alert_suppressions WHERE shipment_id = $1 AND window_start < $2', [key.shipmentId, windowStart]);
    const rows = (await manager.query(
      `INSERT INTO alert_suppressions (shipment_id, window_start, tenant_id, account_id, created_at)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (shipment_id, window_start) DO NOTHING
       RETURNING shipment_id`,
      [key.shipmentId, windowStart, key.tenantId, key.accountId, at],
    )) as unknown[];
    return rows.length > 0;
  }

  /** The shipment's open alert of that device and kind, or else its alert of the excursion that started at `startedAt`. */
  async findOpenOrExcursion(
    manager: EntityManager,
    key: { shipmentId: string; deviceId: string | null; kind: AlertKind; startedAt: Date },
  ): Promise<AlertEntity | null> {
    const rows = (await manager.query(
      `SELECT ${COLUMNS} FROM alerts
        WHERE shipment_id = $1 AND device_id IS NOT DISTINCT FROM $2::uuid AND kind = $3 AND (status = 'Open' OR started_at = $4)
        ORDER BY status = 'Open' DESC
        LIMIT 1`,
      [key.shipmentId, key.deviceId, key.kind, key.startedAt],
    )) as Row[];
    return rows[0] ? fromRow(rows[0]) : null;
  }

  /**
   * Moves the open alert's `peakValue` to `value` when `value` is worse (lower when `lower`, else higher);
   * returns the alert when it changed.
   */
  async raisePeak(
    manager: EntityManager,
    key: { shipmentId: string; deviceId: string | null; kind: AlertKind },
    value: number,
    lower: boolean,
    at: Date,
  ): Promise<AlertEntity | null> {
    const worse = lower ? 'peak_value IS NULL OR $4 < peak_value' : 'peak_value IS NULL OR $4 > peak_value';
    const rows = updatedRows(
      await manager.query(
        `UPDATE alerts SET peak_value = $4, updated_at = $5
          WHERE shipment_id = $1 AND device_id IS NOT DISTINCT FROM $2::uuid AND kind = $3 AND status = 'Open' AND (${worse})
          RETURNING ${COLUMNS}`,
        [key.shipmentId, key.deviceId, key.kind, value, at],
      ),
    );
    return rows[0] ? fromRow(rows[0]) : null;
  }

  /**
   * Closes the selected open alerts with `endedAt` (never before an alert's start: an alert that started
   * after `endedAt`, in event time, ends when it started); returns those it closed, oldest first.
   */
  async closeOpen(manager: EntityManager, selection: OpenAlertSelection, endedAt: Date, at: Date): Promise<AlertEntity[]> {
    const conditions = [`shipment_id = $1`, `status = 'Open'`];
    const params: unknown[] = [selection.shipmentId, endedAt, at];
    if (selection.deviceId !== undefined) {
      params.push(selection.deviceId);
      conditions.push(`device_id IS NOT DISTINCT FROM $${params.length}::uuid`);
    }
    if (selection.kind !== undefined) {
      params.push(selection.kind);
      conditions.push(`kind = $${params.length}`);
    }
    const rows = updatedRows(
      await manager.query(
        `UPDATE alerts SET status = 'Closed', ended_at = greatest($2::timestamptz, started_at), updated_at = $3
          WHERE ${conditions.join(' AND ')}
          RETURNING ${COLUMNS}`,
        params,
      ),
    );
    return rows.map(fromRow).sort((a, b) => Number(BigInt(a.seq) - BigInt(b.seq)));
  }

  /** Sets `acknowledgedAt` of the account's alert unless it is set; returns the alert when this set it. */
  async acknowledge(manager: EntityManager, scope: AccountScope, id: string, at: Date): Promise<AlertEntity | null> {
    if (!isUuid(id)) return null;
    const rows = updatedRows(
      await manager.query(
        `UPDATE alerts SET acknowledged_at = $4, updated_at = $4
          WHERE id = $1 AND account_id = $2 AND tenant_id = $3 AND acknowledged_at IS NULL
          RETURNING ${COLUMNS}`,
        [id, scope.accountId, scope.tenantId, at],
      ),
    );
    return rows[0] ? fromRow(rows[0]) : null;
  }

  /** Runs `work` in one transaction. */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.alerts.manager.transaction(work);
  }

  /** The account's alert; null when it has none such. With `manager`, in that transaction. */
  async findOne(scope: AccountScope, id: string, manager: EntityManager = this.alerts.manager): Promise<AlertEntity | null> {
    if (!isUuid(id)) return null;
    // By primary key alone, then the owner: see `ownedBy`.
    return ownedBy(await manager.findOneBy(AlertEntity, { id }), scope);
  }

  findPage(scope: AccountScope, page: PageRequest, filters: AlertFilters): Promise<KeysetPage<AlertEntity>> {
    const query = this.alerts
      .createQueryBuilder('a')
      .where('a.tenant_id = :tenantId', { tenantId: scope.tenantId })
      .andWhere('a.account_id = :accountId', { accountId: scope.accountId });
    if (filters.status) query.andWhere('a.status IN (:...status)', { status: filters.status });
    if (filters.kind) query.andWhere('a.kind IN (:...kind)', { kind: filters.kind });
    if (filters.shipmentId !== undefined) query.andWhere('a.shipment_id = :shipmentId', { shipmentId: filters.shipmentId });
    if (filters.deviceId !== undefined) query.andWhere('a.device_id = :deviceId', { deviceId: filters.deviceId });
    return keysetPage(query, {
      seqColumn: 'a.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      // A list filter is one filter whatever its order, so its cursor binds the sorted list.
      binding: cursorBinding('alerts', {
        accountId: scope.accountId,
        status: filters.status && [...filters.status].sort().join(','),
        kind: filters.kind && [...filters.kind].sort().join(','),
        shipmentId: filters.shipmentId,
        deviceId: filters.deviceId,
      }),
    });
  }
}

interface Row {
  id: string;
  seq: string;
  tenant_id: string;
  account_id: string;
  shipment_id: string;
  device_id: string | null;
  kind: AlertKind;
  status: AlertStatus;
  started_at: Date;
  ended_at: Date | null;
  threshold: number;
  peak_value: number | null;
  acknowledged_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The rows of an UPDATE ... RETURNING: TypeORM answers it with `[rows, count]`. */
function updatedRows(result: unknown): Row[] {
  return (result as [Row[], number])[0];
}

function fromRow(row: Row): AlertEntity {
  return Object.assign(new AlertEntity(), {
    id: row.id,
    seq: String(row.seq),
    tenantId: row.tenant_id,
    accountId: row.account_id,
    shipmentId: row.shipment_id,
    deviceId: row.device_id,
    kind: row.kind,
    status: row.status === AlertStatus.Open ? AlertStatus.Open : AlertStatus.Closed,
    startedAt: row.started_at,
    endedAt: row.ended_at,
    threshold: row.threshold,
    peakValue: row.peak_value,
    acknowledgedAt: row.acknowledged_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  });
}
