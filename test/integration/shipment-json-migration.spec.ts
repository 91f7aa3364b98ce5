import { randomUUID } from 'node:crypto';
import { createServiceDataSource, ensureDatabase } from '@tracking/database';
import { databaseUrl, dropDatabases } from '@tracking/testing';
import type { DataSource } from 'typeorm';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { omsMigrations } from '../../apps/oms/src/migrations/index.js';
import { ShipmentEntity } from '../../apps/oms/src/shipments/shipment.entity.js';
import { toShipment } from '../../apps/oms/src/shipments/shipments.service.js';

const STORE_SHIPMENT_JSON = 'StoreShipmentJson1763800005000';

/** Rows that exercise every kind of value the stored JSON has to write as `toShipment` does. */
const ROWS = [
  {
    name: 'Quote " backslash \\ newline \n tab \t control \u0001 emoji 🚚 é',
    reference: 'REF-"1"',
    status: 'InTransit',
    mode: 'Sea',
    carrier: 'Maersk </script>',
    planned_departure_at: '2026-01-02T03:04:05.678Z',
    planned_arrival_at: '2026-02-03T04:05:06.789123Z',
    departed_at: '1999-12-31T23:59:59.999Z',
    tags: ['a', 'b "c"', 'ünï'],
    metadata: { nested: { list: [1, 2.5, -3e-7, null, true], text: 'x\ny' }, empty: {} },
  },
  { name: 'All optional fields empty', reference: null, status: 'Planned', mode: null, carrier: null, tags: [], metadata: {} },
];

describe('migration StoreShipmentJson', () => {
  const prefix = `${inject('runId')}_shipment_json_${process.pid}_`;
  const url = databaseUrl(`${prefix}oms`);
  const open: DataSource[] = [];
  afterAll(async () => {
    await Promise.all(open.map((dataSource) => dataSource.destroy()));
    await dropDatabases(prefix);
  });

  async function dataSource(migrations: typeof omsMigrations): Promise<DataSource> {
    const created = createServiceDataSource({ url, poolSize: 2, entities: [ShipmentEntity], migrations, applicationName: 'test' });
    open.push(await created.initialize());
    return created;
  }

  it('writes the JSON of every shipment already stored, as toShipment shows it, and undoes cleanly', async () => {
    await ensureDatabase(url);
    const before = await dataSource(omsMigrations.filter((migration) => migration.name !== STORE_SHIPMENT_JSON));
    await before.runMigrations();
    const ids: string[] = [];
    for (const row of ROWS) {
      const id = randomUUID();
      ids.push(id);
      await before.query(
        `INSERT INTO shipments (id, tenant_id, account_id, name, reference, status, mode, carrier, planned_departure_at,
           planned_arrival_at, departed_at, tags, metadata, created_at, updated_at)
         VALUES ($1, $2, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now(), clock_timestamp())`,
        [
          id,
          randomUUID(),
          row.name,
          row.reference,
          row.status,
          row.mode,
          row.carrier,
          row.planned_departure_at ?? null,
          row.planned_arrival_at ?? null,
          row.departed_at ?? null,
          row.tags,
          row.metadata,
        ],
      );
    }

    const after = await dataSource(omsMigrations);
    const applied = await after.runMigrations();
    expect(applied.map((migration) => migration.name)).toEqual([STORE_SHIPMENT_JSON]);
    for (const id of ids) {
      const [{ api_json: json }] = (await after.query('SELECT api_json FROM shipments WHERE id = $1', [id])) as { api_json: string }[];
      const entity = await after.manager.findOneByOrFail(ShipmentEntity, { id });
      // The same value with its fields in the same order (metadata keeps PostgreSQL's jsonb spacing).
      expect(JSON.parse(json)).toEqual(toShipment(entity));
      expect(Object.keys(JSON.parse(json))).toEqual(Object.keys(toShipment(entity)));
    }
    expect(await after.query('SELECT count(*)::int AS missing FROM shipments WHERE api_json IS NULL')).toEqual([{ missing: 0 }]);

    await after.undoLastMigration();
    const columns = (await after.query(
      "SELECT column_name FROM information_schema.columns WHERE table_name = 'shipments' AND column_name = 'api_json'",
    )) as unknown[];
    expect(columns).toEqual([]);
    const functions = (await after.query(
      "SELECT proname FROM pg_proc WHERE proname IN ('shipments_api_json', 'api_json_string', 'api_json_date_time')",
    )) as unknown[];
    expect(functions).toEqual([]);
  });
});
