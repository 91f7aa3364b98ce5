import type { INestApplicationContext, INestMicroservice } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { natsLivenessCheck, natsReadinessCheck } from '@tracking/messaging';
import type { ReadinessChecks } from '@tracking/observability';
import { DataSource } from 'typeorm';
import { DMS_NATS_CONNECTION } from '../dms/dms.client.js';
import { OperationQueue } from '../operations/operation-queue.js';

/**
 * The OMS's own dependencies: its database and NATS. Redis only carries the queue of bulk operations,
 * and an operation the OMS could not enqueue is recorded anyway and enqueued by the workers'
 * reconciliation, so Redis is reported, not required.
 */
export function omsReadiness(app: INestMicroservice): ReadinessChecks {
  const dataSource = app.get(DataSource, { strict: false });
  const queue = app.get(OperationQueue, { strict: false });
  // Its server connection (requests from the gateway) and its client connection to the DMS.
  const nats = [app.unwrap<NatsConnection>(), app.get<NatsConnection>(DMS_NATS_CONNECTION, { strict: false })];
  return {
    required: {
      database: () => dataSource.query('SELECT 1'),
      nats: natsReadinessCheck(...nats),
    },
    reported: { redis: () => queue.ping() },
    live: { nats: natsLivenessCheck(...nats) },
  };
}

/** A bulk-job worker needs all three: jobs come from Redis, progress goes to the OMS database, chunks to the DMS. */
export function workerReadiness(app: INestApplicationContext): ReadinessChecks {
  const dataSource = app.get(DataSource, { strict: false });
  const nats = app.get<NatsConnection>(DMS_NATS_CONNECTION, { strict: false });
  const queue = app.get(OperationQueue, { strict: false });
  return {
    required: {
      database: () => dataSource.query('SELECT 1'),
      nats: natsReadinessCheck(nats),
      redis: () => queue.ping(),
    },
    live: { nats: natsLivenessCheck(nats) },
  };
}
