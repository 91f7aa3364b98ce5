import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Room in each page of `devices` for the next version of its rows. Every batch of readings moves its
 * devices' last known fields (`DeviceRepository.moveLastKnownStatement`), so a tracker reporting every
 * second rewrites its row every second; none of those columns is indexed, so the update is HOT when the new
 * version fits in the page, and the page's old versions are pruned without VACUUM. Packed full (the
 * default), most pages had no room: the updates went to new pages and touched every index. Measured with
 * pgbench on 2000 devices, 1000-row last-known updates back to back for 15 s: the table grew from 1.3 MB to
 * 82 MB at fillfactor 100 and stayed at 2.7 MB at 50, each update 19 ms against 24 (BENCHMARKS.md, "The
 * device gateway"). Pages written before keep their layout until rewritten (VACUUM FULL, CLUSTER).
 */
export class KeepDeviceUpdatesHot1763900031100 implements MigrationInterface {
  name = 'KeepDeviceUpdatesHot1763900031100';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE devices SET (fillfactor = 50)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE devices RESET (fillfactor)');
  }
}
