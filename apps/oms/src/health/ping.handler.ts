import { Controller } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Subjects } from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { DataSource } from 'typeorm';

/** Answers the gateway's readiness probe: this replica is subscribed and its database answers. */
@Controller()
export class PingHandler {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  @Handles(Subjects.oms.ping)
  async ping(): Promise<{ status: 'ok' }> {
    await this.dataSource.query('SELECT 1');
    return { status: 'ok' };
  }
}
