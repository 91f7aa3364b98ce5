import type { EntityManager } from 'typeorm';

/**
 * The record of shipments and sets whose devices were released (`released_link_targets`): the DMS's
 * guard against a link the OMS checked before the shipment closed or the set was deleted, but which
 * reaches the DMS only afterwards (its OMS died or gave up after sending it).
 *
 * A marker is recorded by the DMS's release, before the OMS's closing transaction commits, so it may
 * belong to a close that never committed (the OMS timed out or failed after the DMS answered). Such a
 * marker must not refuse links for good. The rule that tells the two apart: the OMS checks a link's
 * target under its shipment lock, which a close holds `FOR UPDATE` from before its release until it
 * commits; a link checked after the release was recorded therefore found the close rolled back (or it
 * would have seen the shipment closed and not asked). So a marker refuses only links the OMS checked
 * before it was recorded; `clockSkewMs` bounds the difference between the OMS's and the DMS's clocks and
 * is given to the marker, never taken from it. A link without `checkedAt` is refused by any marker.
 */
export class ReleasedTargets {
  constructor(private readonly clockSkewMs: number) {}

  /** Records `targetId` as released now; a marker left by an earlier release moves to now. */
  async record(manager: EntityManager, targetId: string): Promise<void> {
    await manager.query(
      `INSERT INTO released_link_targets (target_id) VALUES ($1)
       ON CONFLICT (target_id) DO UPDATE SET released_at = now()`,
      [targetId],
    );
  }

  /** Those of `targetIds` whose marker refuses a link the OMS checked at `checkedAt` (epoch ms). */
  async refusing(manager: EntityManager, targetIds: string[], checkedAt: number | undefined): Promise<Set<string>> {
    const rows: { target_id: string }[] = await manager.query(
      `SELECT target_id FROM released_link_targets
        WHERE target_id = ANY($1::uuid[])
          AND ($2::float8 IS NULL OR released_at >= to_timestamp($2::float8 / 1000))`,
      [targetIds, checkedAt === undefined ? null : checkedAt - this.clockSkewMs],
    );
    return new Set(rows.map((row) => row.target_id));
  }
}
