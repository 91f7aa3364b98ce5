import { Injectable } from '@nestjs/common';
import type { ShipmentScope } from '@tracking/contracts';
import type { GeofenceState } from '@tracking/geofence';
import { partitionSql } from '@tracking/outbox';
import type { EntityManager } from 'typeorm';

/** A shipment's evaluation record (table `shipment_evaluations`): the engine's state without its retained readings. */
export interface EvaluationRecord {
  /** Moves with every evaluation; a replica's copy of the full state in memory is good while it matches. */
  version: number;
  /** Null: never evaluated. */
  state: GeofenceState | null;
}

/** A new state to store, read at `version`. */
export interface StateSave {
  shipmentId: string;
  version: number;
  state: GeofenceState;
  dueAt: Date | null;
}

/** A due shipment for the timers' sweep. */
export interface DueEvaluation extends ShipmentScope {
  dueAt: Date;
  /** Its partition of the readings stream. */
  partition: number;
}

/** How much earlier than needed a timer may fire so that most evaluations leave `due_at` as it is (`save`). */
export const DUE_AT_SLACK_SECONDS = 60;

/** Every statement on `shipment_evaluations`. */
@Injectable()
export class EvaluationRecordRepository {
  /**
   * The shipments' records, locked `FOR UPDATE` in id order until the transaction ends (created first when
   * missing, unless `create` is false), so that two evaluations of one shipment take turns whichever
   * worker runs them.
   */
  async lock(
    manager: EntityManager,
    shipments: readonly { id: string; tenantId: string; accountId: string }[],
    options: { create: boolean } = { create: true },
  ): Promise<Map<string, EvaluationRecord>> {
    const records = new Map<string, EvaluationRecord>();
    if (shipments.length === 0) return records;
    const select = async (ids: string[]) => {
      const rows: { shipment_id: string; version: string; state: GeofenceState | null }[] = await manager.query(
        'SELECT shipment_id, version, state FROM shipment_evaluations WHERE shipment_id = ANY($1::uuid[]) ORDER BY shipment_id FOR UPDATE',
        [ids],
      );
      for (const row of rows) records.set(row.shipment_id, { version: Number(row.version), state: row.state });
    };
    await select(shipments.map((shipment) => shipment.id));
    const missing = shipments.filter((shipment) => !records.has(shipment.id));
    if (missing.length > 0 && options.create) {
      await manager.query(
        `INSERT INTO shipment_evaluations (shipment_id, tenant_id, account_id)
           SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[]) ORDER BY 1 ON CONFLICT (shipment_id) DO NOTHING`,
        [missing.map((s) => s.id), missing.map((s) => s.tenantId), missing.map((s) => s.accountId)],
      );
      await select(missing.map((shipment) => shipment.id));
    }
    return records;
  }

  /**
   * Stores each evaluation's state (read at `version`) and when the timers must look next, in one statement.
   *
   * A due time still ahead is kept when the new one is later by less than DUE_AT_SLACK_SECONDS: each
   * reading moves the timers forward a little, and an update that leaves the indexed `due_at` alone is a
   * HOT update (no new entries in the table's indexes, its dead versions pruned within the page, which the
   * table's fillfactor of 70 leaves room for). The timer then fires up to the slack early, finds nothing
   * due (the engine checks), and stores the true due time: one extra look per shipment per slack.
   */
  async save(manager: EntityManager, saves: readonly StateSave[]): Promise<void> {
    if (saves.length === 0) return;
    await manager.query(
      `UPDATE shipment_evaluations AS e SET version = u.version + 1, state = u.state, updated_at = now(),
              due_at = CASE WHEN e.due_at > now() AND u.due_at >= e.due_at AND u.due_at < e.due_at + make_interval(secs => $5)
                            THEN e.due_at ELSE u.due_at END
         FROM unnest($1::uuid[], $2::bigint[], $3::jsonb[], $4::timestamptz[]) AS u (shipment_id, version, state, due_at)
        WHERE e.shipment_id = u.shipment_id`,
      [
        saves.map((save) => save.shipmentId),
        saves.map((save) => save.version),
        saves.map((save) => JSON.stringify(save.state)),
        saves.map((save) => save.dueAt && save.dueAt.toISOString()),
        DUE_AT_SLACK_SECONDS,
      ],
    );
  }

  /** The shipments are closed: nothing is evaluated for them any more. */
  async delete(manager: EntityManager, shipmentIds: readonly string[]): Promise<void> {
    await manager.query('DELETE FROM shipment_evaluations WHERE shipment_id = ANY($1::uuid[])', [shipmentIds]);
  }

  /**
   * Asks the timers to look at the shipment at once (it started, closed, or its conditions changed), in the
   * caller's transaction: a shipment that never reported is still watched for SignalLoss.
   */
  async poke(manager: EntityManager, scope: ShipmentScope): Promise<void> {
    await manager.query(
      `INSERT INTO shipment_evaluations (shipment_id, tenant_id, account_id, due_at) VALUES ($1, $2, $3, now())
         ON CONFLICT (shipment_id) DO UPDATE SET due_at = now()`,
      [scope.shipmentId, scope.tenantId, scope.accountId],
    );
  }

  /**
   * Up to `limit` records due by now of these partitions of the readings stream (of `partitionCount`), the
   * most overdue first (`shipment_evaluations_due_idx`), each with its partition.
   */
  async due(manager: EntityManager, partitions: readonly number[], partitionCount: number, limit: number): Promise<DueEvaluation[]> {
    if (partitions.length === 0) return [];
    const partition = partitionSql('shipment_id', '$3');
    const rows: { shipment_id: string; tenant_id: string; account_id: string; due_at: Date; partition: string }[] = await manager.query(
      `SELECT shipment_id, tenant_id, account_id, due_at, ${partition} AS partition FROM shipment_evaluations
        WHERE due_at IS NOT NULL AND due_at <= now() AND ${partition} = ANY($2::bigint[]) ORDER BY due_at LIMIT $1`,
      [limit, partitions, partitionCount],
    );
    return rows.map((row) => ({ shipmentId: row.shipment_id, tenantId: row.tenant_id, accountId: row.account_id, dueAt: row.due_at, partition: Number(row.partition) }));
  }
}
