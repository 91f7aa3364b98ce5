import { randomUUID } from 'node:crypto';
import { type AccountScope, DeviceStatus, OperationResultStatus, OperationStatus, type PageRequest, ShipmentStatus } from '@tracking/contracts';
import { CursorCodec } from '@tracking/paging';
import { cloneDatabase, dropDatabases } from '@tracking/testing';
import pg from 'pg';
import { DataSource, type Logger } from 'typeorm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DeviceEntity } from '../../apps/dms/src/devices/device.entity.js';
import { DeviceRepository } from '../../apps/dms/src/devices/device.repository.js';
import { ReleasedTargets } from '../../apps/dms/src/devices/released-targets.js';
import { ItemEntity } from '../../apps/oms/src/items/item.entity.js';
import { OperationEntity, OperationEntryEntity } from '../../apps/oms/src/operations/operation.entity.js';
import { OperationRepository } from '../../apps/oms/src/operations/operation.repository.js';
import { PointOfInterestEntity } from '../../apps/oms/src/points-of-interest/point-of-interest.entity.js';
import { PointOfInterestRepository } from '../../apps/oms/src/points-of-interest/point-of-interest.repository.js';
import { SetEntity } from '../../apps/oms/src/sets/set.entity.js';
import { ShipmentEntity } from '../../apps/oms/src/shipments/shipment.entity.js';
import { ShipmentRepository } from '../../apps/oms/src/shipments/shipment.repository.js';

/**
 * The hot reads choose their index without statistics. Each test loads a realistic account into a fresh
 * clone of the migrated database, never runs ANALYZE (as on a fresh database, on a server with autovacuum
 * off, or for a big account loaded faster than autovacuum runs), captures the statements the repositories
 * send (alone and batched with others of the same turn) and asserts on the plans PostgreSQL makes of them,
 * both the first executions' (custom) plan and the generic plan a prepared statement moves to.
 */

const SHIPMENTS = 100_000;
const DEVICES = 30_000;
const POINTS_OF_INTEREST = 20_000;
const OPERATIONS = 20_000;
const ENTRIES_PER_OPERATION = 10_000;
const OPERATIONS_WITH_ENTRIES = 10;

interface Statement {
  text: string;
  values: unknown[];
}

/** Every statement sent through `dataSource`, TypeORM's and the prepared hot reads alike, in order. */
function captureStatements(dataSource: DataSource, into: Statement[]): void {
  const pool = (dataSource.driver as unknown as { master: { query: (config: { text: string; values?: unknown[] }) => unknown } }).master;
  const query = pool.query.bind(pool);
  // Observes, never changes, what reaches PostgreSQL.
  pool.query = (config) => {
    into.push({ text: config.text, values: config.values ?? [] });
    return query(config);
  };
}

class CapturingLogger implements Logger {
  constructor(private readonly into: Statement[]) {}
  logQuery(query: string, parameters?: unknown[]): void {
    this.into.push({ text: query, values: parameters ?? [] });
  }
  logQueryError(): void {
    // Only the statements sent matter here (a failing one fails its test).
  }
  logQuerySlow(): void {
    // As logQueryError.
  }
  logSchemaBuild(): void {
    // As logQueryError.
  }
  logMigration(): void {
    // As logQueryError.
  }
  log(): void {
    // As logQueryError.
  }
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** A short text of the plan, for failure messages. */
function outline(plan: PlanNode, depth = 0): string {
  const self = `${'  '.repeat(depth)}${plan['Node Type']}${plan['Relation Name'] ? ` on ${plan['Relation Name']}` : ''}${plan['Index Name'] ? ` using ${plan['Index Name']}` : ''}`;
  return [self, ...(plan.Plans ?? []).map((child) => outline(child, depth + 1))].join('\n');
}

describe('query plans of the hot reads on tables never analyzed', () => {
  const runId = inject('runId');
  const prefix = `${runId}_plans_${process.pid}_`;
  const scope: AccountScope = { tenantId: randomUUID(), accountId: randomUUID() };
  const otherScopes: AccountScope[] = Array.from({ length: 3 }, () => ({ tenantId: randomUUID(), accountId: randomUUID() }));
  const codec = new CursorCodec('plans-secret');
  const omsStatements: Statement[] = [];
  const dmsStatements: Statement[] = [];
  let oms: DataSource;
  let dms: DataSource;
  let omsClient: pg.Client;
  let dmsClient: pg.Client;
  let shipments: ShipmentRepository;
  let devices: DeviceRepository;
  let pointsOfInterest: PointOfInterestRepository;
  let operations: OperationRepository;
  let entriesOperationId: string;

  async function open(template: string, name: string, entities: DataSource['options']['entities'], into: Statement[]) {
    const url = await cloneDatabase(template, `${prefix}${name}`);
    const dataSource = new DataSource({ type: 'postgres', url, entities, poolSize: 4, logging: false, logger: new CapturingLogger(into) });
    await dataSource.initialize();
    captureStatements(dataSource, into);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return { dataSource, client };
  }

  beforeAll(async () => {
    await dropDatabases(prefix);
    ({ dataSource: oms, client: omsClient } = await open(
      `${runId}_oms_tpl`,
      'oms',
      [ShipmentEntity, PointOfInterestEntity, SetEntity, ItemEntity, OperationEntity, OperationEntryEntity],
      omsStatements,
    ));
    ({ dataSource: dms, client: dmsClient } = await open(`${runId}_dms_tpl`, 'dms', [DeviceEntity], dmsStatements));
    shipments = new ShipmentRepository(oms.getRepository(ShipmentEntity), codec);
    pointsOfInterest = new PointOfInterestRepository(oms.getRepository(PointOfInterestEntity), codec);
    operations = new OperationRepository(oms.getRepository(OperationEntity), oms.getRepository(OperationEntryEntity), codec);
    devices = new DeviceRepository(dms.getRepository(DeviceEntity), codec, new ReleasedTargets(1000));

    // Nine rows in ten are the account's, one in ten another account's, interleaved as concurrent writers leave them.
    const tenants = [scope.tenantId, ...otherScopes.map((other) => other.tenantId)];
    const accounts = [scope.accountId, ...otherScopes.map((other) => other.accountId)];
    const owner = (n: string) => `CASE WHEN ${n} % 10 = 0 THEN 2 + ${n} % 3 ELSE 1 END`;
    await omsClient.query(
      `INSERT INTO shipments (id, tenant_id, account_id, name, reference, status, mode, carrier, tags, metadata, created_at, updated_at)
       SELECT gen_random_uuid(), ($1::uuid[])[o], ($2::uuid[])[o], 'Shipment ' || n, 'REF-' || n,
              (ARRAY['Planned', 'Planned', 'Planned', 'InTransit', 'InTransit', 'Delivered', 'Completed', 'Cancelled'])[1 + n % 8],
              'Road', 'Carrier', ARRAY['bench'], jsonb_build_object('lane', 'L' || n % 97), now(), now()
         FROM generate_series(1, ${SHIPMENTS}) AS n, LATERAL (SELECT ${owner('n')} AS o) AS owner`,
      [tenants, accounts],
    );
    await omsClient.query(
      `INSERT INTO points_of_interest (id, tenant_id, account_id, name, kind, lat, lng, created_at, updated_at)
       SELECT gen_random_uuid(), ($1::uuid[])[o], ($2::uuid[])[o], 'Place ' || n, 'Warehouse', 0, 0, now(), now()
         FROM generate_series(1, ${POINTS_OF_INTEREST}) AS n, LATERAL (SELECT ${owner('n')} AS o) AS owner`,
      [tenants, accounts],
    );
    await omsClient.query(
      `INSERT INTO operations (id, tenant_id, account_id, type, status, total, created_at, updated_at)
       SELECT gen_random_uuid(), ($1::uuid[])[o], ($2::uuid[])[o], (ARRAY['BulkRetire', 'BulkSetAssignment'])[1 + n % 2],
              (ARRAY['Succeeded', 'Succeeded', 'Failed', 'Pending', 'Cancelled'])[1 + n % 5], ${ENTRIES_PER_OPERATION}, now(), now()
         FROM generate_series(1, ${OPERATIONS}) AS n, LATERAL (SELECT ${owner('n')} AS o) AS owner`,
      [tenants, accounts],
    );
    // The entries of a few operations of the account: seven in ten processed, one in five of those failed.
    const { rows } = await omsClient.query<{ id: string }>(
      `SELECT id FROM operations WHERE account_id = $1 ORDER BY seq LIMIT ${OPERATIONS_WITH_ENTRIES}`,
      [scope.accountId],
    );
    entriesOperationId = rows[0]!.id;
    await omsClient.query(
      `INSERT INTO operation_entries (operation_id, entry_index, device_id, status, error_code, error_message)
       SELECT op, i, gen_random_uuid(), s, CASE WHEN s = 'Failed' THEN 'DeviceNotFound' END, CASE WHEN s = 'Failed' THEN 'gone' END
         FROM unnest($1::uuid[]) AS op, generate_series(0, ${ENTRIES_PER_OPERATION - 1}) AS i,
              LATERAL (SELECT CASE WHEN i >= ${ENTRIES_PER_OPERATION * 0.7} THEN NULL WHEN i % 5 = 0 THEN 'Failed' ELSE 'Succeeded' END AS s) AS st`,
      [rows.map((row) => row.id)],
    );
    await dmsClient.query(
      `INSERT INTO devices (id, tenant_id, account_id, serial_number, model, status, retired_at, shipment_id, set_id, metadata, created_at, updated_at)
       SELECT gen_random_uuid(), ($1::uuid[])[o], ($2::uuid[])[o], 'SN-' || n, 'TempTrack T4', st,
              CASE WHEN st = 'Retired' THEN now() END, CASE WHEN st = 'Assigned' THEN gen_random_uuid() END,
              CASE WHEN st = 'Assigned' THEN gen_random_uuid() END, '{}', now(), now()
         FROM generate_series(1, ${DEVICES}) AS n, LATERAL (SELECT ${owner('n')} AS o) AS owner,
              LATERAL (SELECT CASE WHEN n % 20 = 0 THEN 'Retired' WHEN n % 7 = 0 THEN 'Assigned' ELSE 'Available' END AS st) AS status`,
      [tenants, accounts],
    );
  }, 240_000);

  afterAll(async () => {
    await Promise.all([omsClient?.end(), dmsClient?.end(), oms?.destroy(), dms?.destroy()]);
    await dropDatabases(prefix);
  });

  /** The statements `read` sends, captured from `into`. */
  async function statementsOf(into: Statement[], read: () => Promise<unknown>): Promise<Statement[]> {
    const start = into.length;
    await read();
    return into.slice(start);
  }

  /** The statement `read` sends that reads `table` (the single one when `match` is not given). */
  async function statementOf(into: Statement[], read: () => Promise<unknown>, match: (text: string) => boolean = () => true): Promise<Statement> {
    const sent = (await statementsOf(into, read)).filter((statement) => match(statement.text));
    expect(sent, sent.map((statement) => statement.text).join('\n')).toHaveLength(1);
    return sent[0]!;
  }

  /** PostgreSQL's plans of `statement` prepared, the custom plan of its first executions and the generic one. */
  async function plansOf(client: pg.Client, statement: Statement): Promise<{ custom: PlanNode; generic: PlanNode }> {
    const literals = statement.values.map((value) =>
      value === null || value === undefined ? 'NULL' : client.escapeLiteral(String(Array.isArray(value) ? arrayLiteral(value) : value)),
    );
    const execute = `EXECUTE plan_check${literals.length > 0 ? `(${literals.join(', ')})` : ''}`;
    await client.query(`PREPARE plan_check AS ${statement.text}`);
    try {
      const plans: PlanNode[] = [];
      for (const mode of ['force_custom_plan', 'force_generic_plan']) {
        await client.query(`SET plan_cache_mode = ${mode}`);
        const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${execute}`);
        plans.push(rows[0]!['QUERY PLAN'][0].Plan);
      }
      return { custom: plans[0]!, generic: plans[1]! };
    } finally {
      await client.query('DEALLOCATE plan_check');
      await client.query('RESET plan_cache_mode');
    }
  }

  /**
   * Asserts that both plans of `statement` read `table` only through `indexes`, never by a sequential
   * scan, and sort nothing: the index order is the page order.
   */
  async function expectIndexPlan(client: pg.Client, statement: Statement, table: string, indexes: string[], scans = ['Index Scan']) {
    for (const [kind, plan] of Object.entries(await plansOf(client, statement))) {
      const all = nodes(plan);
      const message = `${kind} plan of\n${statement.text}\n${outline(plan)}`;
      const reads = all.filter((node) => node['Relation Name'] === table);
      expect(reads.length, message).toBeGreaterThan(0);
      for (const node of reads) {
        expect(scans, message).toContain(node['Node Type']);
        const index = node['Node Type'] === 'Bitmap Heap Scan' ? node.Plans?.[0]?.['Index Name'] : node['Index Name'];
        expect(indexes, message).toContain(index);
      }
      expect(all.filter((node) => node['Node Type'] === 'Sort' || node['Node Type'] === 'Seq Scan').map((node) => node['Node Type']), message).toEqual([]);
    }
  }

  /** Two reads in the same turn: the one statement `batchedRows` sends for both. */
  async function batchedStatementOf(into: Statement[], read: () => Promise<unknown>): Promise<Statement> {
    return statementOf(into, () => Promise.all([read(), read()]), (text) => text.includes('_tracking_batch'));
  }

  const firstPage: PageRequest = { limit: 50, includeTotal: false };

  /** A cursor past about half of what `read` pages through, as the repository issues it. */
  async function deepCursor(read: (page: PageRequest) => Promise<Buffer>, rows: number): Promise<string> {
    const body = JSON.parse((await read({ limit: Math.floor(rows / 2), includeTotal: false })).toString()) as { metadata: { nextCursor: string } };
    return body.metadata.nextCursor;
  }

  it('the tables were never analyzed', async () => {
    for (const [client, tables] of [
      [omsClient, ['shipments', 'points_of_interest', 'operations', 'operation_entries']],
      [dmsClient, ['devices']],
    ] as const) {
      const { rows } = await client.query<{ relname: string; reltuples: number; last_analyze: Date | null }>(
        `SELECT c.relname, c.reltuples, s.last_analyze FROM pg_class AS c JOIN pg_stat_user_tables AS s ON s.relid = c.oid
          WHERE c.relname = ANY($1)`,
        [tables],
      );
      expect(rows).toHaveLength(tables.length);
      for (const row of rows) expect(row, row.relname).toMatchObject({ reltuples: -1, last_analyze: null });
      const { rows: statistics } = await client.query('SELECT tablename FROM pg_stats WHERE tablename = ANY($1)', [tables]);
      expect(statistics).toEqual([]);
    }
  });

  describe('list shipments', () => {
    const keysetIndexes = ['shipments_account_seq_idx'];
    const statusIndexes = ['shipments_account_status_seq_idx'];
    const list = (page: PageRequest, status?: ShipmentStatus[]) => () => shipments.findPageJson(scope, page, { status });

    it('first page and a deep page, alone and batched, read the keyset index in order', async () => {
      const cursor = await deepCursor((page) => shipments.findPageJson(scope, page, {}), SHIPMENTS * 0.9);
      for (const page of [firstPage, { ...firstPage, cursor }]) {
        await expectIndexPlan(omsClient, await statementOf(omsStatements, list(page)), 'shipments', keysetIndexes);
        await expectIndexPlan(omsClient, await batchedStatementOf(omsStatements, list(page)), 'shipments', keysetIndexes);
      }
    });

    it('a status filter of one status or several reads the status index in order', async () => {
      for (const status of [[ShipmentStatus.Planned], [ShipmentStatus.InTransit, ShipmentStatus.Delivered, ShipmentStatus.Planned]]) {
        const cursor = await deepCursor((page) => shipments.findPageJson(scope, page, { status }), SHIPMENTS * 0.9 * (status.length === 1 ? 0.375 : 0.75));
        for (const page of [firstPage, { ...firstPage, cursor }]) {
          await expectIndexPlan(omsClient, await statementOf(omsStatements, list(page, status)), 'shipments', statusIndexes);
          await expectIndexPlan(omsClient, await batchedStatementOf(omsStatements, list(page, status)), 'shipments', statusIndexes);
        }
      }
    });

    it('includeTotal counts through the keyset indexes', async () => {
      for (const status of [undefined, [ShipmentStatus.Planned], [ShipmentStatus.InTransit, ShipmentStatus.Delivered]]) {
        const count = await statementOf(omsStatements, list({ ...firstPage, includeTotal: true }, status), (text) => text.includes('count('));
        await expectIndexPlan(omsClient, count, 'shipments', [...keysetIndexes, ...statusIndexes], ['Index Scan', 'Index Only Scan', 'Bitmap Heap Scan']);
      }
    });

    it('the pages are right: in seq order, filtered, no row missed or repeated', async () => {
      const status = [ShipmentStatus.Delivered, ShipmentStatus.InTransit];
      const { rows } = await omsClient.query<{ id: string }>(
        'SELECT id FROM shipments WHERE tenant_id = $1 AND account_id = $2 AND status = ANY($3) ORDER BY seq',
        [scope.tenantId, scope.accountId, status],
      );
      const seen: string[] = [];
      let cursor: string | undefined;
      let total: number | undefined;
      do {
        const body = JSON.parse((await shipments.findPageJson(scope, { limit: 5000, includeTotal: cursor === undefined, cursor }, { status })).toString()) as {
          items: { id: string; status: string }[];
          metadata: { nextCursor: string | null; total?: number };
        };
        total ??= body.metadata.total;
        seen.push(...body.items.map((item) => item.id));
        cursor = body.metadata.nextCursor ?? undefined;
      } while (cursor);
      expect(total).toBe(rows.length);
      expect(seen).toEqual(rows.map((row) => row.id));
    });
  });

  it('get shipment reads the primary key, alone and batched', async () => {
    const { rows } = await omsClient.query<{ id: string }>('SELECT id FROM shipments WHERE account_id = $1 LIMIT 1', [scope.accountId]);
    const get = () => shipments.findOneJson(scope, rows[0]!.id);
    await expectIndexPlan(omsClient, await statementOf(omsStatements, get), 'shipments', ['shipments_pkey']);
    await expectIndexPlan(omsClient, await batchedStatementOf(omsStatements, get), 'shipments', ['shipments_pkey']);
  });

  it('point reads keep to the primary key on a small never-analyzed table, where an account index looks as cheap', async () => {
    // Without statistics, `id = $1 AND account_id = $2 AND tenant_id = $3` on a table of some 20000 rows costs
    // the same through the (tenant_id, account_id, seq) keyset index as through the primary key, and the
    // keyset index reads the whole account. The statements are taken first: the table is then rebuilt small
    // inside a transaction that is rolled back, which would block the repositories' own connections.
    const [{ id: shipmentId }] = (await omsClient.query<{ id: string }>('SELECT id FROM shipments WHERE account_id = $1 LIMIT 1', [scope.accountId])).rows;
    const [{ id: deviceId }] = (await dmsClient.query<{ id: string }>('SELECT id FROM devices WHERE account_id = $1 LIMIT 1', [scope.accountId])).rows;
    const getShipment = () => shipments.findOneJson(scope, shipmentId!);
    const alone = await statementOf(omsStatements, getShipment);
    const batched = await batchedStatementOf(omsStatements, getShipment);
    const device = await statementOf(dmsStatements, () => devices.findOne(scope, deviceId!));
    const small = 20_000;
    for (const [client, table, statements, columns, values] of [
      [omsClient, 'shipments', [alone, batched], 'id, tenant_id, account_id, name, status, mode, created_at, updated_at', `'Shipment ' || n, 'Planned', 'Road', now(), now()`],
      [dmsClient, 'devices', [device], 'id, tenant_id, account_id, serial_number, model, status, metadata, created_at, updated_at', `'SMALL-' || n, 'T4', 'Available', '{}', now(), now()`],
    ] as const) {
      await client.query('BEGIN');
      try {
        await client.query(`TRUNCATE ${table} CASCADE`);
        await client.query(
          `INSERT INTO ${table} (${columns}) SELECT gen_random_uuid(), $1, $2, ${values} FROM generate_series(1, ${small}) AS n`,
          [scope.tenantId, scope.accountId],
        );
        for (const statement of statements) await expectIndexPlan(client, statement, table, [`${table}_pkey`]);
      } finally {
        await client.query('ROLLBACK');
      }
    }
  });

  describe('devices', () => {
    const list = (page: PageRequest, status?: DeviceStatus[]) => () => devices.findPageJson(scope, page, { status });

    it('list devices, first and deep page, alone and batched, with and without status filters, reads the keyset indexes in order', async () => {
      for (const [status, indexes, share] of [
        [undefined, ['devices_account_seq_idx'], 1],
        [[DeviceStatus.Available], ['devices_account_status_seq_idx'], 0.8],
        [[DeviceStatus.Available, DeviceStatus.Assigned], ['devices_account_status_seq_idx'], 0.95],
      ] as const) {
        const filter = status && [...status];
        const cursor = await deepCursor((page) => devices.findPageJson(scope, page, { status: filter }), DEVICES * 0.9 * share);
        for (const page of [firstPage, { ...firstPage, cursor }]) {
          await expectIndexPlan(dmsClient, await statementOf(dmsStatements, list(page, filter)), 'devices', [...indexes]);
          await expectIndexPlan(dmsClient, await batchedStatementOf(dmsStatements, list(page, filter)), 'devices', [...indexes]);
        }
      }
    });

    it('get device reads the primary key', async () => {
      const { rows } = await dmsClient.query<{ id: string }>('SELECT id FROM devices WHERE account_id = $1 LIMIT 1', [scope.accountId]);
      await expectIndexPlan(dmsClient, await statementOf(dmsStatements, () => devices.findOne(scope, rows[0]!.id)), 'devices', ['devices_pkey']);
    });
  });

  it('list points of interest, first and deep page, and its total, read the keyset index', async () => {
    const first = await pointsOfInterest.findPage(scope, { limit: POINTS_OF_INTEREST / 2, includeTotal: false });
    const cursor = first.metadata.nextCursor!;
    const indexes = ['points_of_interest_account_seq_idx'];
    for (const page of [firstPage, { ...firstPage, cursor }]) {
      await expectIndexPlan(omsClient, await statementOf(omsStatements, () => pointsOfInterest.findPage(scope, page)), 'points_of_interest', indexes);
    }
    const count = await statementOf(omsStatements, () => pointsOfInterest.findPage(scope, { ...firstPage, includeTotal: true }), (text) => /count\(/i.test(text));
    await expectIndexPlan(omsClient, count, 'points_of_interest', indexes, ['Index Scan', 'Index Only Scan', 'Bitmap Heap Scan']);
  });

  it('list operations, with and without filters, first and deep page, reads the keyset index', async () => {
    const indexes = ['operations_account_seq_idx'];
    for (const filters of [{}, { status: [OperationStatus.Succeeded, OperationStatus.Failed] }]) {
      const first = await operations.findPage(scope, { limit: OPERATIONS / 4, includeTotal: false }, filters);
      for (const page of [firstPage, { ...firstPage, cursor: first.metadata.nextCursor! }]) {
        await expectIndexPlan(omsClient, await statementOf(omsStatements, () => operations.findPage(scope, page, filters)), 'operations', indexes);
      }
    }
  });

  it('operation results, with and without a status, first and deep page, read an entries index in entry order', async () => {
    for (const [status, indexes] of [
      [undefined, ['operation_entries_pkey']],
      [OperationResultStatus.Failed, ['operation_entries_status_idx']],
    ] as const) {
      const first = await operations.findResults(entriesOperationId, { limit: 1000, includeTotal: false }, status);
      for (const page of [firstPage, { ...firstPage, cursor: first.metadata.nextCursor! }]) {
        const read = () => operations.findResults(entriesOperationId, page, status);
        await expectIndexPlan(omsClient, await statementOf(omsStatements, read), 'operation_entries', [...indexes]);
      }
    }
  });
});

/** A JavaScript array as PostgreSQL's array literal (`{"a","b"}`), as node-postgres sends one. */
function arrayLiteral(values: unknown[]): string {
  return `{${values.map((value) => `"${String(value).replace(/["\\]/g, '\\$&')}"`).join(',')}}`;
}
