import 'reflect-metadata';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  type AssignDeviceRequest,
  type DeviceInput,
  ErrorCode,
  type LinkEntry,
  type OperationChunk,
  type OperationChunkResult,
  type ReleaseDevicesRequest,
  type RetireEntry,
  type SettleOperationRequest,
  type UnassignDeviceRequest,
} from '@tracking/contracts';
import { createLogger, DomainError } from '@tracking/core';
import { createServiceDataSource, type ServiceDataSourceOptions } from '@tracking/database';
import { ServiceMetrics } from '@tracking/observability';
import { cloneDatabase, dropDatabases } from '@tracking/testing';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { inject } from 'vitest';
import { readDmsConfig } from '../../apps/dms/src/config.js';
import { DeviceEntity } from '../../apps/dms/src/devices/device.entity.js';
import { DevicesService } from '../../apps/dms/src/devices/devices.service.js';
import { DmsModule } from '../../apps/dms/src/dms.module.js';
import { OperationChunksService } from '../../apps/dms/src/operations/operation-chunks.service.js';
import { AssignmentsModule } from '../../apps/oms/src/assignments/assignments.module.js';
import { type OmsConfig, readOmsConfig } from '../../apps/oms/src/config.js';
import { DMS_NATS_CONNECTION, DmsClient } from '../../apps/oms/src/dms/dms.client.js';
import { AlertEntity } from '../../apps/oms/src/alerts/alert.entity.js';
import { VisitEntity } from '../../apps/oms/src/alerts/visit.entity.js';
import { ItemEntity } from '../../apps/oms/src/items/item.entity.js';
import { OmsCoreModule } from '../../apps/oms/src/oms-core.module.js';
import { OperationEntity, OperationEntryEntity } from '../../apps/oms/src/operations/operation.entity.js';
import { OperationQueue } from '../../apps/oms/src/operations/operation-queue.js';
import { OperationRepository } from '../../apps/oms/src/operations/operation.repository.js';
import { OperationRunner } from '../../apps/oms/src/operations/operation-runner.js';
import { OperationsModule } from '../../apps/oms/src/operations/operations.module.js';
import { PointOfInterestEntity } from '../../apps/oms/src/points-of-interest/point-of-interest.entity.js';
import { SetEntity } from '../../apps/oms/src/sets/set.entity.js';
import { SetsModule } from '../../apps/oms/src/sets/sets.module.js';
import { ShipmentEntity } from '../../apps/oms/src/shipments/shipment.entity.js';
import { ShipmentRepository } from '../../apps/oms/src/shipments/shipment.repository.js';
import { ShipmentsModule } from '../../apps/oms/src/shipments/shipments.module.js';
import { JETSTREAM_CONNECTION, OutboxRelayHost } from '@tracking/outbox';

/**
 * The medium test tier: one service, its real repositories and a clone of the run's migrated template
 * database, built by Nest from the app's own modules, with no HTTP and no NATS. The OMS's only way out,
 * its `DmsClient`, is replaced by `InProcessDmsClient`, which calls a real DMS (on its own clone) in this
 * process. A failing rule here points at the service that decides it.
 */

const logger = createLogger('medium', process.env.LOG_LEVEL ?? 'silent');
let counter = 0;

/** A fresh clone of the run's migrated `oms` or `dms` template; `drop` removes it. */
export async function cloneServiceDatabase(service: 'oms' | 'dms'): Promise<{ url: string; drop: () => Promise<void> }> {
  const runId = inject('runId');
  const name = `${runId}_medium_${process.pid}_${++counter}`;
  const url = await cloneDatabase(`${runId}_${service}_tpl`, `${name}_${service}`);
  // The separator matters: `..._1_` must not drop the database of `..._10_`.
  return { url, drop: () => dropDatabases(`${name}_`) };
}

/** A plain client on a medium service's database, for what the service must not be asked (setup, locks, checks). */
export async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

export interface MediumService {
  module: TestingModule;
  dataSource: DataSource;
  url: string;
  get<T>(type: abstract new (...args: never[]) => T): T;
  close(): Promise<void>;
}

async function build(
  service: 'oms' | 'dms',
  entities: ServiceDataSourceOptions['entities'],
  compile: (dataSource: DataSource) => Promise<TestingModule>,
): Promise<MediumService> {
  const { url, drop } = await cloneServiceDatabase(service);
  const dataSource = createServiceDataSource({ url, poolSize: 4, entities, migrations: [], applicationName: `medium-${service}` });
  await dataSource.initialize();
  const module = await compile(dataSource);
  await module.init();
  return {
    module,
    dataSource,
    url,
    get: (type) => module.get(type, { strict: false }),
    close: async () => {
      await module.close();
      if (dataSource.isInitialized) await dataSource.destroy();
      await drop();
    },
  };
}

/** The DMS (`DmsModule`, devices and operation chunks) on a fresh database. */
export function startMediumDms(): Promise<MediumService> {
  const config = readDmsConfig({ CURSOR_SECRET: 'medium-cursor-secret' });
  return build('dms', [DeviceEntity], (dataSource) =>
    Test.createTestingModule({ imports: [DmsModule.forRoot(config, dataSource)] }).compile(),
  );
}

export interface MediumOms extends MediumService {
  config: OmsConfig;
  /** Operation ids the OMS handed to its queue (no Redis: the runner is called directly). */
  enqueued: string[];
  /** An `OperationRunner` as a worker builds it, with this OMS's repository and DMS client. */
  runner(): OperationRunner;
}

/**
 * The OMS's feature modules (shipments, sets, assignments, operations) on a fresh database, with `dms`
 * as its DMS client. `env` overrides the configuration (e.g. `WORKER_CHUNK_SIZE`).
 */
export async function startMediumOms(dms: InProcessDmsClient, env: Record<string, string> = {}): Promise<MediumOms> {
  const config = readOmsConfig({ CURSOR_SECRET: 'medium-cursor-secret', ...env });
  const enqueued: string[] = [];
  const queue: Pick<OperationQueue, 'enqueue'> = { enqueue: async (ids) => void enqueued.push(...ids) };
  const service = await build(
    'oms',
    [ShipmentEntity, PointOfInterestEntity, SetEntity, ItemEntity, OperationEntity, OperationEntryEntity, AlertEntity, VisitEntity],
    (dataSource) =>
      Test.createTestingModule({
        imports: [
          OmsCoreModule.forRoot(config, dataSource, logger, new ServiceMetrics('medium-oms')),
          ShipmentsModule,
          SetsModule,
          AssignmentsModule,
          OperationsModule,
        ],
      })
        .overrideProvider(DMS_NATS_CONNECTION)
        .useValue(null)
        // No NATS: the outbox is written (the tests read it) but not relayed.
        .overrideProvider(JETSTREAM_CONNECTION)
        .useValue(null)
        .overrideProvider(OutboxRelayHost)
        .useValue({})
        .overrideProvider(DmsClient)
        .useValue(dms)
        .overrideProvider(OperationQueue)
        .useValue(queue)
        .compile(),
  );
  return {
    ...service,
    config,
    enqueued,
    runner: () => new OperationRunner(service.get(OperationRepository), service.get(ShipmentRepository), dms as unknown as DmsClient, config, logger),
  };
}

type DmsCalls = Pick<DmsClient, 'assign' | 'unassign' | 'release' | 'linkChunk' | 'retireChunk' | 'settle'>;

/**
 * The OMS's `DmsClient` without NATS: each call goes straight to the DMS's service object, as its
 * handler would pass it on, with the deadline the real client sets. `down` makes every call fail as an
 * absent DMS does (503 ServiceUnavailable); `intercept` lets a test act around one call.
 */
export class InProcessDmsClient implements DmsCalls {
  down = false;
  intercept?: <T>(subject: keyof DmsCalls, call: () => Promise<T>) => Promise<T>;

  constructor(
    private readonly dms: MediumService,
    private readonly timeoutMs = 4000,
  ) {}

  private call<T>(subject: keyof DmsCalls, work: () => Promise<T>): Promise<T> {
    if (this.down) return Promise.reject(new DomainError(ErrorCode.ServiceUnavailable, 'The service is not available; retry after a short delay.'));
    return this.intercept ? this.intercept(subject, work) : work();
  }

  private deadline(): number {
    return Date.now() + this.timeoutMs - Math.min(1000, this.timeoutMs / 4);
  }

  async assign(request: Omit<AssignDeviceRequest, 'deadline' | 'checkedAt'>): Promise<void> {
    await this.call('assign', () => this.dms.get(DevicesService).assign({ ...request, deadline: this.deadline(), checkedAt: Date.now() }));
  }

  async unassign(request: Omit<UnassignDeviceRequest, 'deadline'>): Promise<void> {
    await this.call('unassign', () => this.dms.get(DevicesService).unassign({ ...request, deadline: this.deadline() }));
  }

  async release(request: Omit<ReleaseDevicesRequest, 'deadline'>): Promise<void> {
    await this.call('release', () => this.dms.get(DevicesService).release({ ...request, deadline: this.deadline() }));
  }

  linkChunk(request: Omit<OperationChunk<LinkEntry>, 'deadline' | 'checkedAt'>): Promise<OperationChunkResult> {
    return this.call('linkChunk', () => this.dms.get(OperationChunksService).link({ ...request, deadline: this.deadline(), checkedAt: Date.now() }));
  }

  retireChunk(request: Omit<OperationChunk<RetireEntry>, 'deadline'>): Promise<OperationChunkResult> {
    return this.call('retireChunk', () => this.dms.get(OperationChunksService).retire({ ...request, deadline: this.deadline() }));
  }

  settle(request: SettleOperationRequest): Promise<OperationChunkResult> {
    return this.call('settle', () => this.dms.get(OperationChunksService).settle(request));
  }
}

/** A tenant and account of their own for each test, so tests of one file never see each other's rows. */
export function newScope(): { tenantId: string; accountId: string } {
  return { tenantId: crypto.randomUUID(), accountId: crypto.randomUUID() };
}

let serial = 0;
/** A device input with a serial number unique in the run. */
export function deviceInput(overrides: Partial<DeviceInput> = {}): DeviceInput {
  return { serialNumber: `SN-${process.pid}-${++serial}`, model: 'T-100', ...overrides };
}

/** The error a promise rejects with (a test failure when it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<DomainError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error('expected the call to be refused, but it succeeded');
}

/**
 * Waits until some other session of the database at `url` waits for a lock (the call under test has
 * reached the lock the test holds), polling `pg_stat_activity`; fails after `timeoutMs`.
 */
export async function untilWaitingForLock(observer: pg.Client, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await observer.query<{ waiting: number }>(
      `SELECT count(*)::int AS waiting FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
    );
    if (rows[0].waiting > 0) return;
    if (Date.now() > until) throw new Error('no session started waiting for a lock');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** What the DMS client throws when the DMS's answer is lost (a timeout): the caller cannot tell whether it applied. */
export const lostAnswer = (): DomainError => new DomainError(ErrorCode.GatewayTimeout, 'The service did not answer in time; retry with backoff.');

/**
 * Runs a bulk operation whose first chunk the DMS applies but whose answer is lost, with `cancel` called
 * at that moment and already waiting for the operation's lock: a cancel that lands while a chunk is in
 * flight. Resolves with the run's result once the cancel has finished too.
 */
export async function runCancelledDuringLostChunk(pair: MediumPair, operationId: string, cancel: () => Promise<unknown>): Promise<boolean> {
  let cancelling: Promise<unknown> | undefined;
  pair.client.intercept = async (subject, call) => {
    const answer = await call();
    if (subject !== 'linkChunk' || cancelling) return answer;
    cancelling = cancel();
    const observer = await connect(pair.oms.url);
    try {
      await untilWaitingForLock(observer);
    } finally {
      await observer.end();
    }
    throw lostAnswer();
  };
  const ran = await pair.oms.runner().run(operationId);
  await cancelling;
  return ran;
}

/** An OMS whose DMS client calls a real DMS in this process, each on a database of its own. */
export interface MediumPair {
  dms: MediumService;
  oms: MediumOms;
  client: InProcessDmsClient;
  close(): Promise<void>;
}

export async function startMediumPair(env: Record<string, string> = {}): Promise<MediumPair> {
  const dms = await startMediumDms();
  const client = new InProcessDmsClient(dms);
  const oms = await startMediumOms(client, env).catch(async (error: unknown) => {
    await dms.close();
    throw error;
  });
  return {
    dms,
    oms,
    client,
    close: async () => {
      await oms.close();
      await dms.close();
    },
  };
}
