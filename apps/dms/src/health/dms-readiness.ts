import type { INestMicroservice } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { natsLivenessCheck, natsReadinessCheck } from '@tracking/messaging';
import type { ReadinessChecks } from '@tracking/observability';
import { DataSource } from 'typeorm';

/** The DMS's own dependencies: its database and NATS; live while its NATS connection is not closed for good. */
export function dmsReadiness(app: INestMicroservice): ReadinessChecks {
  const dataSource = app.get(DataSource, { strict: false });
  const nats = app.unwrap<NatsConnection>();
  return {
    required: {
      database: () => dataSource.query('SELECT 1'),
      nats: natsReadinessCheck(nats),
    },
    live: { nats: natsLivenessCheck(nats) },
  };
}
