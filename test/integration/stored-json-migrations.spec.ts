import { randomUUID } from 'node:crypto';
import { createServiceDataSource, ensureDatabase } from '@tracking/database';
import { databaseUrl, dropDatabases } from '@tracking/testing';
import type { DataSource, MigrationInterface } from 'typeorm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DeviceEntity } from '../../apps/dms/src/devices/device.entity.js';
import { toDevice } from '../../apps/dms/src/devices/devices.service.js';
import { dmsMigrations } from '../../apps/dms/src/migrations/index.js';
import { omsMigrations } from '../../apps/oms/src/migrations/index.js';
import { ShipmentEntity } from '../../apps/oms/src/shipments/shipment.entity.js';
import { ShipmentRepository } from '../../apps/oms/src/shipments/shipment.repository.js';
import { toShipment } from '../../apps/oms/src/shipments/shipment-events.js';

type Row = Record<string, unknown>;

interface StoredJsonCase<Entity> {
  service: string;
  migrations: (new () => MigrationInterface)[];
  migration: string;
  entity: new () => Entity;
  table: string;
  functions: string[];
  /** Rows that exercise every kind of value the stored JSON has to write as the service's mapper does. */
  rows: Row[];
  toApi: (entity: Entity) => unknown;
  /** What undoing the migration (and every later one) must leave; by default no `api_json` and none of `functions`. */
  undone?: (dataSource: DataSource, subject: StoredJsonCase<Entity>) => Promise<void>;
}

/** Without `api_json` and its functions, as before StoreShipmentJson / StoreDeviceJson. */
async function expectNoStoredJson(dataSource: DataSource, subject: StoredJsonCase<object>): Promise<void> {
  const columns = (await dataSource.query(
    `SELECT column_name FROM information_schema.columns WHERE table_name = $1 AND column_name = 'api_json'`,
    [subject.table],
  )) as unknown[];
  expect(columns).toEqual([]);
  expect(await dataSource.query('SELECT proname FROM pg_proc WHERE proname = ANY($1)', [subject.functions])).toEqual([]);
}

const awkwardText = 'Quote " backslash \\ newline \n tab \t control \u0001 emoji 🚚 é </script>';

const shipments: StoredJsonCase<ShipmentEntity> = {
  service: 'oms',
  migrations: omsMigrations,
  migration: 'StoreShipmentJson1763800005000',
  entity: ShipmentEntity,
  table: 'shipments',
  functions: ['shipments_api_json', 'api_json_string', 'api_json_date_time'],
  rows: [
    {
      name: awkwardText,
      reference: 'REF-"1"',
      status: 'InTransit',
      mode: 'Sea',
      carrier: awkwardText,
      planned_departure_at: '2026-01-02T03:04:05.678Z',
      planned_arrival_at: '2026-02-03T04:05:06.789123Z',
      departed_at: '1999-12-31T23:59:59.999Z',
      tags: ['a', 'b "c"', 'ünï'],
      metadata: { nested: { list: [1, 2.5, -3e-7, null, true], text: 'x\ny' }, empty: {} },
    },
    { name: 'All optional fields empty', status: 'Planned', tags: [], metadata: {} },
  ],
  toApi: toShipment,
};

/** The tracking fields (autoTransitions, conditions, excursions) of CreateAlertsAndVisits, on rows stored before it. */
const shipmentTracking: StoredJsonCase<ShipmentEntity> = {
  ...shipments,
  migration: 'CreateAlertsAndVisits1763800020000',
  undone: async (dataSource) => {
    const rows = (await dataSource.query('SELECT api_json FROM shipments')) as { api_json: string }[];
    expect(rows).toHaveLength(shipments.rows.length);
    for (const row of rows) {
      const keys = Object.keys(JSON.parse(row.api_json));
      expect(keys.at(-1)).toBe('updatedAt');
      expect(keys).not.toContain('excursions');
    }
    const columns = (await dataSource.query(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'shipments' AND column_name = ANY($1)`,
      [['auto_transitions', 'conditions', 'excursion_temperature_ms', 'excursion_humidity_ms']],
    )) as unknown[];
    expect(columns).toEqual([]);
  },
};

/** The shipment's lastPosition of AddShipmentLastPosition, on rows stored before it. */
const shipmentLastPosition: StoredJsonCase<ShipmentEntity> = {
  ...shipments,
  migration: 'AddShipmentLastPosition1763800021000',
  undone: async (dataSource) => {
    const rows = (await dataSource.query('SELECT api_json FROM shipments')) as { api_json: string }[];
    expect(rows).toHaveLength(shipments.rows.length);
    for (const row of rows) expect(Object.keys(JSON.parse(row.api_json)).at(-1)).toBe('excursions');
    const columns = (await dataSource.query(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'shipments' AND column_name LIKE 'last_position%'`,
    )) as unknown[];
    expect(columns).toEqual([]);
  },
};

/** The shipment's eta of AddShipmentEta, on rows stored before it. */
const shipmentEta: StoredJsonCase<ShipmentEntity> = {
  ...shipments,
  migration: 'AddShipmentEta1763800031200',
  undone: async (dataSource) => {
    const rows = (await dataSource.query('SELECT api_json FROM shipments')) as { api_json: string }[];
    expect(rows).toHaveLength(shipments.rows.length);
    for (const row of rows) expect(Object.keys(JSON.parse(row.api_json)).at(-1)).toBe('lastPosition');
    const columns = (await dataSource.query(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'shipments' AND column_name LIKE 'eta%'`,
    )) as unknown[];
    expect(columns).toEqual([]);
    const tables = (await dataSource.query(`SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'eta_lane%'`)) as unknown[];
    expect(tables).toEqual([]);
  },
};

const devices: StoredJsonCase<DeviceEntity> = {
  service: 'dms',
  migrations: dmsMigrations,
  migration: 'StoreDeviceJson1763800008000',
  entity: DeviceEntity,
  table: 'devices',
  functions: ['devices_api_json', 'api_json_number', 'api_json_string', 'api_json_date_time'],
  rows: [
    {
      serial_number: awkwardText,
      model: 'Model "X"',
      status: 'Available',
      firmware_version: '1.2.3-β',
      battery_level: 12.345678901234567,
      last_seen_at: '2026-03-04T05:06:07.891Z',
      // A string: the driver would send the number -0 as '0'.
      last_location_lat: '-0',
      last_location_lng: 1e-7,
      metadata: { reading: { celsius: -4.25, tags: ['cold', 'chain'] } },
    },
    {
      serial_number: 'SN-RETIRED',
      model: 'M',
      status: 'Retired',
      retired_at: '2026-05-06T07:08:09.100Z',
      battery_level: 100,
      last_location_lat: 89.99999999999999,
      last_location_lng: -180,
      metadata: {},
    },
    { serial_number: 'SN-EMPTY', model: 'M', status: 'Available', battery_level: 0, metadata: {} },
  ],
  toApi: toDevice,
};

describe.each([shipments, shipmentTracking, shipmentLastPosition, shipmentEta, devices] as StoredJsonCase<object>[])('migration $migration', (subject) => {
  const prefix = `${inject('runId')}_stored_json_${process.pid}_${subject.service}_`;
  const url = databaseUrl(`${prefix}db`);
  const open: DataSource[] = [];
  afterAll(async () => {
    await Promise.all(open.map((dataSource) => dataSource.destroy()));
    await dropDatabases(prefix);
  });

  async function dataSource(migrations: StoredJsonCase<object>['migrations']): Promise<DataSource> {
    const created = createServiceDataSource({ url, poolSize: 2, entities: [subject.entity], migrations, applicationName: 'test' });
    open.push(await created.initialize());
    return created;
  }

  it(`writes the JSON of every row already stored as the service shows it, and undoes cleanly`, async () => {
    await ensureDatabase(url);
    // The migrations before the one under test; then it and every later one, so that the rows end in the
    // current schema, which the current entity and mapper read.
    const position = subject.migrations.findIndex((migration) => new migration().name === subject.migration);
    expect(position).toBeGreaterThan(0);
    const before = await dataSource(subject.migrations.slice(0, position));
    await before.runMigrations();
    const ids: string[] = [];
    for (const row of subject.rows) {
      const id = randomUUID();
      ids.push(id);
      const tenant = randomUUID();
      const columns: Row = { id, tenant_id: tenant, account_id: tenant, ...row };
      const names = Object.keys(columns);
      await before.query(
        `INSERT INTO ${subject.table} (${names.join(', ')}, created_at, updated_at)
         VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')}, now(), clock_timestamp())`,
        Object.values(columns),
      );
    }

    const after = await dataSource(subject.migrations);
    const applied = await after.runMigrations();
    expect(applied.map((migration) => migration.name)).toEqual(subject.migrations.slice(position).map((migration) => new migration().name));
    for (const id of ids) {
      const [{ api_json: json }] = (await after.query(`SELECT api_json FROM ${subject.table} WHERE id = $1`, [id])) as { api_json: string }[];
      // What the API wrote before, through JSON.stringify (which writes -0 as 0).
      const expected: unknown = JSON.parse(JSON.stringify(subject.toApi(await after.manager.findOneByOrFail(subject.entity, { id }))));
      // The same value with its fields in the same order (metadata keeps PostgreSQL's jsonb spacing).
      expect(JSON.parse(json)).toEqual(expected);
      expect(Object.keys(JSON.parse(json))).toEqual(Object.keys(expected as object));
    }
    expect(await after.query(`SELECT count(*)::int AS missing FROM ${subject.table} WHERE api_json IS NULL`)).toEqual([{ missing: 0 }]);

    for (let undone = 0; undone < applied.length; undone++) await after.undoLastMigration();
    await (subject.undone ?? expectNoStoredJson)(after, subject);
  });
});

describe('shipments_api_json: the fields readings move (MoveShipmentPositionInPlace)', () => {
  const prefix = `${inject('runId')}_stored_json_${process.pid}_moved_`;
  const url = databaseUrl(`${prefix}db`);
  let source: DataSource;
  let repository: ShipmentRepository;
  const tenant = randomUUID();
  const destination = randomUUID();
  // The mark the trigger cuts at, in every place a client's text can hold it, with characters of 2 to 4
  // bytes before it, so that a count in characters and one in bytes disagree.
  const mark = ',"lastPosition":';
  const awkward = `ß ✓ 🚚 ${mark} "${mark}" \\ end`;

  beforeAll(async () => {
    await ensureDatabase(url);
    source = createServiceDataSource({ url, poolSize: 2, entities: [ShipmentEntity], migrations: omsMigrations, applicationName: 'test' });
    await source.initialize();
    await source.runMigrations();
    repository = new ShipmentRepository(source.getRepository(ShipmentEntity), undefined as never);
    await source.query(
      `INSERT INTO points_of_interest (id, tenant_id, account_id, name, kind, lat, lng, created_at, updated_at)
       VALUES ($1, $2, $2, 'Depot', 'Warehouse', 51.5, -0.1, now(), now())`,
      [destination, tenant],
    );
  });
  afterAll(async () => {
    await source?.destroy();
    await dropDatabases(prefix);
  });

  async function insertShipment(columns: Row): Promise<string> {
    const id = randomUUID();
    const all: Row = { id, tenant_id: tenant, account_id: tenant, name: awkward, status: 'InTransit', ...columns };
    const names = Object.keys(all);
    await source.query(
      `INSERT INTO shipments (${names.join(', ')}, created_at, updated_at) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')}, now(), now())`,
      Object.values(all),
    );
    return id;
  }
  const stored = async (id: string) => ((await source.query('SELECT api_json FROM shipments WHERE id = $1', [id])) as { api_json: string }[])[0]!.api_json;
  /** What the whole formatting writes for the row as it is: a NULL asks the trigger for it. */
  const whole = async (id: string) =>
    ((await source.query('UPDATE shipments SET api_json = NULL WHERE id = $1 RETURNING api_json', [id])) as [{ api_json: string }[], number])[0][0]!.api_json;
  /** Stores `text` as the row's JSON with the triggers off: a text the trigger did not write. */
  const tamper = (id: string, expression: string) =>
    source.query(`BEGIN; SET LOCAL session_replication_role = replica; UPDATE shipments SET api_json = ${expression} WHERE id = '${id}'; COMMIT`);

  let clock = Date.parse('2026-06-01T10:00:00.000Z');
  const move = (id: string, lat: number, lng: number, accuracyMeters: number | null = null) =>
    repository.moveLastPositions([{ shipmentId: id, deviceId: randomUUID(), lat, lng, accuracyMeters, recordedAt: (clock += 60_123) }]);
  const estimate = (id: string, minutes: number) =>
    source.transaction((manager) =>
      repository.saveEstimates(manager, [
        {
          shipmentId: id,
          destinationId: destination,
          estimate: { arrivalAt: clock + minutes * 60_000, earliestAt: clock + minutes * 50_000, latestAt: clock + minutes * 70_000 + 1, remainingMeters: minutes * 987.654321, basis: 'Position', asOf: clock },
          calculatedAt: new Date(clock + 1234),
          publishedArrivalAt: null,
        },
      ]),
    );

  it('moves lastPosition and eta to what formatting the whole shipment writes, whatever the text before them holds', async () => {
    const rows = [
      { tags: [awkward, mark, 'x'], metadata: { [mark]: awkward, lastPosition: { lat: 1 } }, conditions: { [mark]: [mark] }, destination_id: destination, planned_arrival_at: '2026-06-02T00:00:00.000Z' },
      { reference: mark, carrier: awkward, mode: 'Road', destination_id: destination, excursion_temperature_ms: 12500 },
      { status: 'Planned', metadata: {} },
      { status: 'Delivered', delivered_at: '2026-05-01T00:00:00.001Z', destination_id: destination, planned_arrival_at: '2026-06-02T00:00:00.000Z' },
    ];
    for (const row of rows) {
      const id = await insertShipment(row);
      const steps = [
        () => move(id, 51.123456789, -0.000001, 4.5),
        () => estimate(id, 90),
        () => move(id, -33.9, 151.2),
        () => estimate(id, 7),
        () => move(id, 0, -180, 0),
      ];
      for (const step of steps) {
        await step();
        const moved = await stored(id);
        expect(moved).toBe(await whole(id));
        const entity = await source.manager.findOneByOrFail(ShipmentEntity, { id });
        expect(JSON.parse(moved)).toEqual(JSON.parse(JSON.stringify(toShipment(entity))));
      }
    }
  });

  it('keeps the text before the mark on such an update, and formats the whole text after any other change', async () => {
    const id = await insertShipment({ destination_id: destination });
    await move(id, 10, 10);
    // A stand-in for the head, stored with the triggers off: what the fast path keeps, the whole formatting replaces.
    await tamper(id, `replace(api_json, '"name":', '"name" :')`);
    await move(id, 11, 11);
    await estimate(id, 30);
    expect(await stored(id)).toContain('"name" :');
    expect(JSON.parse(await stored(id))).toMatchObject({ lastPosition: { lat: 11, lng: 11 }, eta: { basis: 'Position' } });
    // The excursions come before the mark: their update formats the whole text.
    await repository.setExcursions(source.manager, id, 2000, 0);
    let text = await stored(id);
    expect(text).not.toContain('"name" :');
    expect(JSON.parse(text)).toMatchObject({ excursions: { temperatureSeconds: 2 } });

    // Texts the trigger did not write: a second mark (its first occurrence is not its last), or none.
    const tampered: [string, (text: string) => boolean][] = [
      [`replace(api_json, ',"createdAt":', '${mark}0,"createdAt":')`, (found) => found.split(mark).length === 3],
      [`replace(api_json, '${mark}', ',"position":')`, (found) => !found.includes(mark)],
    ];
    for (const [change, isTampered] of tampered) {
      await tamper(id, change);
      expect(isTampered(await stored(id))).toBe(true);
      await move(id, 12, 12);
      text = await stored(id);
      expect(isTampered(text)).toBe(false);
      expect(text).toBe(await whole(id));
      expect(JSON.parse(text)).toMatchObject({ lastPosition: { lat: 12, lng: 12 } });
    }
  });
});
