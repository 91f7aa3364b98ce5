import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The devices of some sets (`dms.devices.linked`, which fills each set's `deviceIds`) without scanning the account. */
export class IndexDeviceSets1763800005000 implements MigrationInterface {
  name = 'IndexDeviceSets1763800005000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('CREATE INDEX devices_account_set_idx ON devices (account_id, set_id) WHERE set_id IS NOT NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX devices_account_set_idx');
  }
}
