import { compressOutboxWithDefault, compressOutboxWithLz4 } from '@tracking/outbox';
import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Outbox payloads compressed with lz4 (libs/outbox, `compressOutboxWithLz4`). */
export class CompressOutboxWithLz41763800013000 implements MigrationInterface {
  name = 'CompressOutboxWithLz41763800013000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await compressOutboxWithLz4(queryRunner);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await compressOutboxWithDefault(queryRunner);
  }
}
