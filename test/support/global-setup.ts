import 'reflect-metadata';
import type { TestProject } from 'vitest/node';
import { prepareDatabase } from '@tracking/database';
import {
  databaseUrl,
  deleteRedisKeys,
  deleteStaleTestKeys,
  dropDatabases,
  dropStaleTestDatabases,
  newRunId,
} from '@tracking/testing';
import { dmsMigrations } from '../../apps/dms/src/migrations/index.js';
import { gatewayMigrations } from '../../apps/gateway/src/migrations/index.js';
import { omsMigrations } from '../../apps/oms/src/migrations/index.js';
import { deleteStaleTestStreams, deleteStreams } from './jetstream.js';

const SERVICES = { gateway: gatewayMigrations, oms: omsMigrations, dms: dmsMigrations };

/**
 * Once per test run: a run id, and one migrated template database per service, which each test
 * file clones (`CREATE DATABASE ... TEMPLATE`). Everything the run created, databases, Redis keys
 * under `test:<runId>` and JetStream streams `test_<runId>_...`, is dropped at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await Promise.all([dropStaleTestDatabases(), deleteStaleTestKeys(), deleteStaleTestStreams()]);
  const runId = newRunId();
  for (const [service, migrations] of Object.entries(SERVICES)) {
    const dataSource = await prepareDatabase({
      url: databaseUrl(`${runId}_${service}_tpl`),
      poolSize: 1,
      entities: [],
      migrations,
      applicationName: `${service}-template`,
    });
    await dataSource.destroy();
  }
  project.provide('runId', runId);
  return async () => {
    await Promise.all([dropDatabases(`${runId}_`), deleteRedisKeys(`test:${runId}_`), deleteStreams(`test.${runId}_`)]);
  };
}
