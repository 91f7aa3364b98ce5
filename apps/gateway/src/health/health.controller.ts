import { Controller, Get, HttpCode, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import { Subjects } from '@tracking/contracts';
import type { FastifyReply } from 'fastify';
import type { DataSource } from 'typeorm';
import { ServiceClient } from '../rpc/rpc.module.js';

type Check = 'ok' | 'failing';
const PROBE_TIMEOUT_MS = 2000;

@ApiExcludeController()
@Controller('health')
export class HealthController {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly services: ServiceClient,
  ) {}

  /** The process is up and its event loop turns. */
  @Get('live')
  @HttpCode(200)
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Ready to serve: the identity database, NATS, and at least one replica of each service answer. */
  @Get('ready')
  async ready(@Res({ passthrough: true }) reply: FastifyReply): Promise<{ status: Check; checks: Record<string, Check> }> {
    const [database, oms, dms] = await Promise.all([
      probe(() => this.dataSource.query('SELECT 1')),
      probe(() => this.services.call(Subjects.oms.ping, {}, undefined, PROBE_TIMEOUT_MS)),
      probe(() => this.services.call(Subjects.dms.ping, {}, undefined, PROBE_TIMEOUT_MS)),
    ]);
    const checks = { database, nats: this.services.isConnected() ? 'ok' : 'failing', oms, dms } as const;
    const status: Check = Object.values(checks).every((check) => check === 'ok') ? 'ok' : 'failing';
    reply.status(status === 'ok' ? 200 : 503);
    return { status, checks };
  }
}

async function probe(check: () => Promise<unknown>): Promise<Check> {
  try {
    await check();
    return 'ok';
  } catch {
    return 'failing';
  }
}
