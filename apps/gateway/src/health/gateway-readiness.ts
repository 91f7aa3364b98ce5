import type { INestApplicationContext } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { natsLivenessCheck, natsReadinessCheck } from '@tracking/messaging';
import type { ReadinessChecks } from '@tracking/observability';
import { DataSource } from 'typeorm';
import { SharedRedis } from '../protection/redis/shared-redis.js';
import { NATS_CONNECTION } from '../rpc/rpc.module.js';

/**
 * What the ops port's `/health/ready` checks, the gateway's own dependencies: its identity database
 * and NATS. Not the OMS and DMS (the public `/health/ready` on the API port still reports them): when
 * a service is down, every gateway would fail alike, and taking them all out of the Service would
 * turn 503s on some routes into an outage of every route. Redis is reported, not required, for the
 * same reason (without it each replica enforces rate limits alone).
 */
export function gatewayReadiness(app: INestApplicationContext): ReadinessChecks {
  const dataSource = app.get(DataSource, { strict: false });
  const nats = app.get<NatsConnection>(NATS_CONNECTION, { strict: false });
  const redis = app.get(SharedRedis, { strict: false });
  return {
    required: {
      database: () => dataSource.query('SELECT 1'),
      nats: natsReadinessCheck(nats),
    },
    reported: { redis: () => redis.client.ping() },
    live: { nats: natsLivenessCheck(nats) },
  };
}
