import { createOutboxTable, dropOutboxTable } from '@tracking/outbox';
import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The DMS's transactional outbox (libs/outbox): events written with the change, relayed to JetStream. */
export class CreateOutbox1763800010000 implements MigrationInterface {
  name = 'CreateOutbox1763800010000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await createOutboxTable(queryRunner);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await dropOutboxTable(queryRunner);
  }
}
