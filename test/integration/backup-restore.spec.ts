import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Device, Shipment } from '@tracking/contracts';
import { quoteIdent } from '@tracking/database';
import { databaseUrl } from '@tracking/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assignDevice, createDevice } from '../factories/device.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { createPointOfInterest } from '../factories/point-of-interest.factory.js';
import { createSet } from '../factories/set.factory.js';
import { createShareLink } from '../factories/share-link.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { createWebhook } from '../factories/webhook.factory.js';
import { eventually } from '../support/eventually.js';
import { TestStack } from '../support/stack.js';

const run = promisify(execFile);
const SERVICES = ['gateway', 'oms', 'dms'] as const;
type Service = (typeof SERVICES)[number];
/** Tables of each database the setup below writes rows to. */
const FILLED: Record<Service, string[]> = {
  gateway: ['tenants', 'accounts', 'applications', 'signing_keys'],
  oms: ['shipments', 'points_of_interest', 'points_of_interest_versions', 'sets', 'share_links', 'webhooks', 'events', 'shipment_evaluations'],
  dms: ['devices', 'assignment_periods'],
};

/**
 * Backups as deploy/README.md ("Backup and restore") describes them: each service's database dumped whole
 * (`pg_dump -Fc`, schema and data) while the stack runs, the database made again, empty, and the dump
 * restored into it with `pg_restore`, gives back every row, sequence and schema object (the DMS's daily
 * partitions of `readings`, the triggers that keep the stored API JSON), also over a copy that moved on
 * since the dump, and the restored triggers format the restored rows as the originals were formatted. The
 * dump and the comparison read one exported snapshot, so the stack may go on writing meanwhile.
 */
describe('backups and restores', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let shipment: Shipment;
  let device: Device;
  let dir: string;

  beforeAll(async () => {
    stack = await TestStack.start({ workers: 1, env: { EVALUATION_LATENESS_SECONDS: '5', EVALUATION_DELAY_MS: '20' } });
    tenant = await createTenant(stack, { accounts: 1 });
    dir = mkdtempSync(join(tmpdir(), 'tracking-backup-'));
    const base = `/v1/accounts/${tenant.accountIds[0]}`;
    // Something in every kind of table a tracked shipment touches: places, a destination and its estimate,
    // a set with a device, readings (a partition of the DMS), positions, events, a share link, a webhook.
    const destination = (await createPointOfInterest(stack, tenant, { body: { location: { lat: 48.9, lng: 2.35 }, radiusMeters: 200, dwellSeconds: 5 } }))
      .pointOfInterest.id;
    shipment = await createShipment(stack, tenant, { body: { destinationId: destination } });
    const { set } = await createSet(stack, tenant, shipment.id);
    device = (await createDevice(stack, tenant)).device;
    const linked = await assignDevice(stack, tenant, set, device.id);
    expect((await stack.request('POST', `${base}/shipments/${shipment.id}/start`, { token: tenant.token })).status).toBe(204);
    const readings = Array.from({ length: 20 }, (_, i) => ({
      deviceId: device.id,
      recordedAt: new Date(linked + 1000 + i * 10_000).toISOString(),
      location: { lat: 48.8 + i * 0.001, lng: 2.35, accuracyMeters: 5 },
      temperatureC: 4,
    }));
    const posted = await stack.request('POST', `${base}/readings`, { token: tenant.token, body: { readings } });
    expect(posted.status, posted.text).toBe(200);
    await createShareLink(stack, tenant, shipment.id);
    await createWebhook(stack, tenant);
    await eventually(
      async () => (await stack.request('GET', `${base}/shipments/${shipment.id}`, { token: tenant.token })).body as Shipment,
      (found) => found.lastPosition?.recordedAt === readings.at(-1)?.recordedAt && found.eta !== null,
      'the last position and an estimate on the shipment',
    );
  });

  afterAll(async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    await stack?.stop();
  });

  const sourceUrl = (service: Service) => stack.env[`${service.toUpperCase()}_DATABASE_URL`] as string;

  /** Dumps `service`'s database whole (`pg_dump --format=custom`) in one exported snapshot; the contents it read there. */
  async function dump(service: Service): Promise<{ file: string; source: Contents }> {
    const snapshotHolder = await connect(sourceUrl(service));
    const file = join(dir, `${service}.dump`);
    try {
      await snapshotHolder.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const { rows } = await snapshotHolder.query<{ snapshot: string }>('SELECT pg_export_snapshot() AS snapshot');
      const snapshot = rows[0]!.snapshot;
      const source = await contentsOf(snapshotHolder, await schemaOf(sourceUrl(service), snapshot));
      await run('pg_dump', ['--format=custom', `--snapshot=${snapshot}`, `--file=${file}`, `--dbname=${sourceUrl(service)}`]);
      return { file, source };
    } finally {
      await snapshotHolder.end();
    }
  }

  /** deploy/README.md's restore: the database dropped and made again, empty, and the dump restored into it. */
  async function restore(file: string, name: string): Promise<string> {
    const admin = await connect(databaseUrl('postgres'));
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${quoteIdent(name)}`);
    } finally {
      await admin.end();
    }
    await run('pg_restore', ['--exit-on-error', '--no-owner', `--dbname=${databaseUrl(name)}`, file]);
    return databaseUrl(name);
  }

  async function connect(url: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return client;
  }

  it.each(SERVICES)('restores the %s database from a whole dump with every row, sequence and schema object', async (service) => {
    const { file, source } = await dump(service);
    const url = await restore(file, `${stack.name}_restored_${service}`);
    const target = await connect(url);
    try {
      const restored = await contentsOf(target, await schemaOf(url));
      // The comparison has something to compare: the tables the setup wrote to hold rows.
      for (const table of FILLED[service]) expect(source.tables[table]?.rows, table).toBeGreaterThan(0);
      expect(restored).toEqual(source);
      if (service === 'dms') {
        // The readings are in a daily partition, which a whole dump carries with its rows.
        expect(Object.keys(source.tables).some((table) => /^readings_p\d{8}$/.test(table) && source.tables[table]!.rows > 0)).toBe(true);
        // The restored trigger formats the device as the original was formatted: NULL asks it for the whole text.
        const { rows } = await target.query<{ stored: string; formatted: string }>(
          'WITH old AS (SELECT api_json FROM devices WHERE id = $1) UPDATE devices SET api_json = NULL WHERE id = $1 RETURNING (SELECT api_json FROM old) AS stored, api_json AS formatted',
          [device.id],
        );
        expect(rows[0]!.formatted).toBe(rows[0]!.stored);
        expect(JSON.parse(rows[0]!.formatted).lastLocation).not.toBeNull();
      }
      if (service === 'oms') {
        const { rows } = await target.query<{ stored: string; formatted: string }>(
          'WITH old AS (SELECT api_json FROM shipments WHERE id = $1) UPDATE shipments SET api_json = NULL WHERE id = $1 RETURNING (SELECT api_json FROM old) AS stored, api_json AS formatted',
          [shipment.id],
        );
        expect(rows[0]!.formatted).toBe(rows[0]!.stored);
        const restoredShipment = JSON.parse(rows[0]!.formatted) as Shipment;
        expect(restoredShipment.lastPosition).not.toBeNull();
        expect(restoredShipment.eta).not.toBeNull();
      }
    } finally {
      await target.end();
    }
  });

  it.each(SERVICES)('restores the %s database the same way over a copy that moved on since the dump', async (service) => {
    const { file, source } = await dump(service);
    const name = `${stack.name}_moved_${service}`;
    const moved = await connect(await restore(file, name));
    try {
      // What happened after the dump: the rows gone, and for the DMS a newer day's partition of readings.
      await moved.query(`TRUNCATE ${FILLED[service].map(quoteIdent).join(', ')} CASCADE`);
      if (service === 'dms') await moved.query("CREATE TABLE readings_p20991231 PARTITION OF readings FOR VALUES FROM ('2099-12-31') TO ('2100-01-01')");
    } finally {
      await moved.end();
    }
    const url = await restore(file, name);
    const target = await connect(url);
    try {
      expect(await contentsOf(target, await schemaOf(url))).toEqual(source);
    } finally {
      await target.end();
    }
  });
});

interface Contents {
  /** Per table (partitions too): its row count and a digest of its rows' text, in a fixed order. */
  tables: Record<string, { rows: number; digest: string }>;
  /** Per sequence: where it stands. */
  sequences: Record<string, { lastValue: string; isCalled: boolean }>;
  /** `pg_dump --schema-only`, without its comment lines (see `schemaOf`). */
  schema: string;
}

async function contentsOf(client: pg.Client, schema: string): Promise<Contents> {
  const tables: Contents['tables'] = {};
  const sequences: Contents['sequences'] = {};
  const { rows: relations } = await client.query<{ name: string; kind: string }>(
    "SELECT c.relname AS name, c.relkind AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S') ORDER BY 1",
  );
  for (const { name, kind } of relations) {
    if (kind === 'S') {
      const { rows } = await client.query<{ last_value: string; is_called: boolean }>(`SELECT last_value, is_called FROM ${quoteIdent(name)}`);
      sequences[name] = { lastValue: rows[0]!.last_value, isCalled: rows[0]!.is_called };
    } else if (kind === 'r') {
      // Leaf tables only: a partitioned table's rows are its partitions'.
      const { rows } = await client.query<{ rows: number; digest: string }>(
        `SELECT count(*)::int AS rows, md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) AS digest FROM ONLY ${quoteIdent(name)} AS t`,
      );
      tables[name] = rows[0]!;
    }
  }
  return { tables, sequences, schema };
}

async function schemaOf(url: string, snapshot?: string): Promise<string> {
  const { stdout } = await run('pg_dump', ['--schema-only', '--no-owner', ...(snapshot ? [`--snapshot=${snapshot}`] : []), `--dbname=${url}`], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return (
    stdout
      .split('\n')
      // Comments, and the random key of psql's \restrict guard (pg_dump 15.14 and later).
      .filter((line) => !line.startsWith('--') && !/^\\(un)?restrict /.test(line))
      // A restored CHECK is the dump's text parsed again, which flattens nested ANDs: the same condition
      // with fewer parentheses. Compared without them; a missing or changed constraint still shows.
      .map((line) => (line.includes(' CHECK (') ? line.replace(/[()]/g, '') : line))
      .join('\n')
  );
}
