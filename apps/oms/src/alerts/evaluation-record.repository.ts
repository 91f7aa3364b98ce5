import { Injectable } from '@nestjs/common';
import type { ShipmentScope } from '@tracking/contracts';
import type { GeofenceState } from '@tracking/geofence';
import type { EntityManager } from 'typeorm';

/** A shipment's evaluation record (table `shipment_evaluations`): the engine's state without its retained readings. */
export interface EvaluationRecord {
  /** Moves with every evaluation; a replica's copy of the full state in memory is good while it matches. */
  version: number;
  /** Null: never evaluated. */
  state: GeofenceState | null;
}

/** A due shipment for the timers' sweep. */
export interface DueEvaluation extends ShipmentScope {
  dueAt: Date;
}

/** Every statement on `shipment_evaluations`. */
@Injectable()
export class EvaluationRecordRepository {
  /**
   * The shipment's record, locked `FOR UPDATE` until the transaction ends (created first when missing), so
   * that two evaluations of one shipment take turns whichever replica runs them.
   */
  async lock(manager: EntityManager, scope: ShipmentScope): Promise<EvaluationRecord> {
    const select = async () =>
      ((await manager.query('SELECT version, state FROM shipment_evaluations WHERE shipment_id = $1 FOR UPDATE', [scope.shipmentId])) as {
        version: string;
        state: GeofenceState | null;
      }[])[0];
    let row = await select();
    if (!row) {
      await manager.query(
        `INSERT INTO shipment_evaluations (shipment_id, tenant_id, account_id) VALUES ($1, $2, $3) ON CONFLICT (shipment_id) DO NOTHING`,
        [scope.shipmentId, scope.tenantId, scope.accountId],
      );
      row = await select();
    }
    if (!row) throw new Error(`evaluation record of shipment ${scope.shipmentId} neither inserted nor found`);
    return { version: Number(row.version), state: row.state };
  }

  /** Stores the state of the evaluation that read `version`, and when the timers must look next (null: never). */
  async save(manager: EntityManager, shipmentId: string, version: number, state: GeofenceState, dueAt: Date | null): Promise<void> {
    await manager.query(
      `UPDATE shipment_evaluations SET version = $2 + 1, state = $3::jsonb, due_at = $4, updated_at = now() WHERE shipment_id = $1`,
      [shipmentId, version, JSON.stringify(state), dueAt && dueAt.toISOString()],
    );
  }

  /** The shipment is closed: nothing is evaluated for it any more. */
  async delete(manager: EntityManager, shipmentId: string): Promise<void> {
    await manager.query('DELETE FROM shipment_evaluations WHERE shipment_id = $1', [shipmentId]);
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

  /** Up to `limit` records due by now, the most overdue first (`shipment_evaluations_due_idx`). */
  async due(manager: EntityManager, limit: number): Promise<DueEvaluation[]> {
    const rows: { shipment_id: string; tenant_id: string; account_id: string; due_at: Date }[] = await manager.query(
      `SELECT shipment_id, tenant_id, account_id, due_at FROM shipment_evaluations
        WHERE due_at IS NOT NULL AND due_at <= now() ORDER BY due_at LIMIT $1`,
      [limit],
    );
    return rows.map((row) => ({ shipmentId: row.shipment_id, tenantId: row.tenant_id, accountId: row.account_id, dueAt: row.due_at }));
  }
}
