import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The evaluation of readings' own record per shipment (docs/geofence-evaluation.md, "In the service"):
 * the engine's state without the readings it retains (those are read again from the DMS after a restart),
 * a version that moves with every evaluation (a replica's copy in memory is good while it matches), and
 * `due_at`, when the timers (settling after silence, SignalLoss) must look at the shipment next. Gone
 * with the shipment.
 */
export class CreateShipmentEvaluations1763800022000 implements MigrationInterface {
  name = 'CreateShipmentEvaluations1763800022000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE shipment_evaluations (
        shipment_id uuid PRIMARY KEY REFERENCES shipments (id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        version bigint NOT NULL DEFAULT 0,
        state jsonb,
        due_at timestamptz,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    // The timers' sweep reads the due rows in due order.
    await queryRunner.query('CREATE INDEX shipment_evaluations_due_idx ON shipment_evaluations (due_at) WHERE due_at IS NOT NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE shipment_evaluations');
  }
}
