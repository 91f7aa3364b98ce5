import type { MigrationInterface, QueryRunner } from 'typeorm';

/** `eta_effective_arrival_at`'s expression (AddShipmentEta), binned: the shown arrival, in 10-minute bins. */
const EFFECTIVE_ARRIVAL = `CASE WHEN status IN ('Planned', 'InTransit') AND destination_id IS NOT NULL THEN
      CASE WHEN eta_arrival_at IS NOT NULL AND eta_destination_id = destination_id THEN eta_arrival_at ELSE planned_arrival_at END
    END`;

/**
 * Lets the evaluation's estimate updates be HOT (docs/eta.md, "Cost"). Every evaluation with a new position
 * rewrites its shipment's estimate; indexed on `eta_effective_arrival_at` itself, each of those updates moved
 * the exact arrival in an index, so PostgreSQL wrote a new entry into all eight of the table's indexes (the
 * GIN index on tags included): the statement most often on the CPU in the OMS database under
 * `BENCH_EVAL_DESTINATION=1 npm run bench:evaluation`. The filters' index now holds the arrival in 10-minute
 * bins (`eta_arrival_bin`, a stored generated column), which an estimate seldom leaves; the exact
 * `eta_effective_arrival_at` is no longer in any index and is checked on the rows of the bins at the range's
 * edges. A fillfactor of 70 leaves room in each page for the row's next version (a HOT update needs it in
 * the same page); adding the column rewrites the table, so every page gets it.
 */
export class KeepEstimateUpdatesHot1763800033000 implements MigrationInterface {
  name = 'KeepEstimateUpdatesHot1763800033000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE shipments SET (fillfactor = 70)');
    await queryRunner.query(`
      ALTER TABLE shipments ADD COLUMN eta_arrival_bin timestamptz GENERATED ALWAYS AS (
        date_bin('10 minutes', ${EFFECTIVE_ARRIVAL}, timestamptz '2000-01-01 00:00:00+00')) STORED`);
    await queryRunner.query(`
      CREATE INDEX shipments_account_eta_bin_idx ON shipments (tenant_id, account_id, eta_arrival_bin)
        WHERE eta_arrival_bin IS NOT NULL`);
    await queryRunner.query('DROP INDEX shipments_account_eta_idx');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE INDEX shipments_account_eta_idx ON shipments (tenant_id, account_id, eta_effective_arrival_at)
        WHERE eta_effective_arrival_at IS NOT NULL`);
    await queryRunner.query('DROP INDEX shipments_account_eta_bin_idx');
    await queryRunner.query('ALTER TABLE shipments DROP COLUMN eta_arrival_bin');
    await queryRunner.query('ALTER TABLE shipments RESET (fillfactor)');
  }
}
