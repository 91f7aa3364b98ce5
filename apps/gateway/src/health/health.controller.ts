import { Get, HttpCode, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags, type SchemaObject } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import { Subjects } from '@tracking/contracts';
import type { FastifyReply } from 'fastify';
import type { DataSource } from 'typeorm';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { ApiController } from '../http/api-controller.js';
import { SharedRedis } from '../protection/redis/shared-redis.js';
import { ServiceClient } from '../rpc/rpc.module.js';

type Check = 'ok' | 'failing';
type ReadinessReport = { status: Check; checks: Record<string, Check> };
const PROBE_TIMEOUT_MS = 2000;
/**
 * How long a readiness report is given again instead of checking anew: each check is three database
 * queries' worth of work, two NATS round trips and a Redis ping, and the route is public.
 */
const REPORT_REUSED_FOR_MS = 1000;

const CHECK: SchemaObject = { type: 'string', enum: ['ok', 'failing'] };
const READINESS: SchemaObject = {
  type: 'object',
  required: ['status', 'checks'],
  properties: {
    status: { ...CHECK, description: 'ok when every check but redis is ok.' },
    checks: {
      type: 'object',
      properties: { database: CHECK, nats: CHECK, oms: CHECK, dms: CHECK, redis: { ...CHECK, description: 'Reported, not required.' } },
    },
  },
};

@ApiTags('Health')
@ApiBadRequestResponse({ type: ErrorEnvelopeDto, description: 'InvalidParameter: any query parameter (UnknownField).' })
@ApiController('health')
export class HealthController {
  /** The latest report, or the check under way: every call in the meantime waits for the same one. */
  private latest: { report: Promise<ReadinessReport>; settledAt: number | undefined } | undefined;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly services: ServiceClient,
    private readonly redis: SharedRedis,
  ) {}

  /** The process is up and its event loop turns. */
  @Get('live')
  @HttpCode(200)
  @ApiOperation({ summary: 'Liveness: the process is up and its event loop turns' })
  @ApiOkResponse({ description: 'Alive.', schema: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } } })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /**
   * Ready to serve: the identity database, NATS, and at least one replica of each service answer.
   * Redis is reported but not required: without it each replica limits alone and only POSTs with an
   * Idempotency-Key are refused, and as every replica shares one Redis, taking them all out of the
   * load balancer would turn that into a full outage.
   *
   * Calls within a second of a check get its report; concurrent calls share the one check in flight. The
   * route is rate limited per client address like any other (probes use the ops port's `/health/ready`).
   */
  @Get('ready')
  @ApiOperation({ summary: 'Readiness: the identity database, NATS, the OMS and the DMS answer (Redis is reported)' })
  @ApiOkResponse({ description: 'Ready to serve.', schema: READINESS })
  @ApiServiceUnavailableResponse({ description: 'Not ready: a required check is failing.', schema: READINESS })
  async ready(@Res({ passthrough: true }) reply: FastifyReply): Promise<ReadinessReport> {
    const report = await this.report();
    reply.status(report.status === 'ok' ? 200 : 503);
    return report;
  }

  private report(): Promise<ReadinessReport> {
    const latest = this.latest;
    if (latest && (latest.settledAt === undefined || Date.now() - latest.settledAt < REPORT_REUSED_FOR_MS)) return latest.report;
    const entry: NonNullable<typeof this.latest> = { report: this.check(), settledAt: undefined };
    // `check` never rejects: a failing dependency is a report, not an error.
    const settled = () => (entry.settledAt = Date.now());
    void entry.report.then(settled, settled);
    this.latest = entry;
    return entry.report;
  }

  private async check(): Promise<ReadinessReport> {
    const [database, oms, dms, redis] = await Promise.all([
      probe(() => this.dataSource.query('SELECT 1')),
      probe(() => this.services.call(Subjects.oms.ping, {}, undefined, PROBE_TIMEOUT_MS)),
      probe(() => this.services.call(Subjects.dms.ping, {}, undefined, PROBE_TIMEOUT_MS)),
      probe(() => this.redis.client.ping()),
    ]);
    const required = { database, nats: this.services.isConnected() ? 'ok' : 'failing', oms, dms } as const;
    const status: Check = Object.values(required).every((check) => check === 'ok') ? 'ok' : 'failing';
    return { status, checks: { ...required, redis } };
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
