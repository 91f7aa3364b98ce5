import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Shipments and sets whose devices were released because they closed or were deleted. A link to one of
 * them is refused by the DMS itself, whatever happened to the OMS that asked for it (it may have died
 * or given up after sending the request), so no device can end up linked to a closed shipment.
 */
export class CreateReleasedLinkTargets1763800006000 implements MigrationInterface {
  name = 'CreateReleasedLinkTargets1763800006000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE released_link_targets (
        target_id uuid PRIMARY KEY,
        released_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE released_link_targets');
  }
}
