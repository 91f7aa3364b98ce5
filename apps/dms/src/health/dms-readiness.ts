import type { INestMicroservice } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import type { ReadinessChecks } from '@tracking/observability';
import { DataSource } from 'typeorm';

/** The DMS's own dependencies: its database and NATS. */
export function dmsReadiness(app: INestMicroservice): ReadinessChecks {
  const dataSource = app.get(DataSource, { strict: false });
  return {
    required: {
      database: () => dataSource.query('SELECT 1'),
      nats: () => app.unwrap<NatsConnection>().flush(),
    },
  };
}
