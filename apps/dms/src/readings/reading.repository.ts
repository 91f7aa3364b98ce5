import { Injectable } from '@nestjs/common';
import {
  type AccountScope,
  type PageMetadata,
  type PageRequest,
  READING_VALUES,
  type Reading,
  type ReadingFilters,
  type ShipmentReadingKey,
  type ShipmentReadingsPage,
} from '@tracking/contracts';
import { CursorCodec, cursorBinding } from '@tracking/paging';
import { DataSource, type EntityManager } from 'typeorm';
import { moveLastKnownFrom } from '../devices/device.repository.js';

/** A device's time on a shipment, half-open: [assignedAt, releasedAt). */
export interface AssignmentPeriod {
  deviceId: string;
  shipmentId: string;
  assignedAt: number;
  releasedAt: number | null;
}

/** One reading to store. */
export interface ReadingRow {
  id: string;
  deviceId: string;
  recordedAt: number;
  /** `recordedAt` as an ISO date-time, written once for the insert and the publication. */
  recordedAtText: string;
  values: (number | null)[];
}

const COLUMNS = READING_VALUES.map((value) => value.column);
const VALUE_ARRAYS = COLUMNS.map((_, i) => `$${i + 6}::float8[]`).join(', ');

/**
 * The batch insert: one statement per chunk, every row through `unnest`, `ON CONFLICT DO NOTHING` on the
 * key (device_id, recorded_at). It answers only how many rows it stored: when that is every row (the usual
 * case) nothing more is read, otherwise `findStored` tells which (speed machinery: the simple version
 * returns every stored key, 1000 rows to read back and match per batch).
 *
 * The same statement reads the assignment periods of the rows' devices that overlap the rows' time range
 * ($19 to $20, by `assignment_periods_device_idx`): which shipment each reading belongs to (its
 * publication carries it). A statement of its own until issue 31; here it saves a round trip per batch.
 * Its snapshot is taken after the devices' lock statement returned, as a statement of its own would be,
 * and no period of a locked device opens or closes until the batch commits. Periods of rows that turn out
 * duplicates are read too; only the stored rows are matched against them. One row at least (the count),
 * with null period columns when there is no period.
 *
 * And it moves the devices' last known fields from the rows it stored (`moveLastKnownFrom`: `RETURNING`
 * gives exactly the rows of this batch that were new, never a duplicate's or a conflict's), on the devices
 * the transaction locked before: what a statement of its own after the insert did from eight arrays of
 * parameters.
 */
const INSERT = `
  WITH stored AS (
    INSERT INTO readings (id, tenant_id, account_id, device_id, recorded_at, received_at, ${COLUMNS.join(', ')})
    SELECT u.id, $1, $2, u.device_id, u.recorded_at, $3, ${COLUMNS.map((column) => `u.${column}`).join(', ')}
      FROM unnest($4::uuid[], $5::uuid[], $18::timestamptz[], ${VALUE_ARRAYS})
        AS u (id, device_id, recorded_at, ${COLUMNS.join(', ')})
    ON CONFLICT DO NOTHING
    RETURNING device_id, recorded_at, lat, lng, accuracy_meters, battery_percent),
  ${moveLastKnownFrom('stored')},
  periods AS (
    SELECT device_id, shipment_id, (extract(epoch FROM assigned_at) * 1000)::bigint AS assigned_ms,
           (extract(epoch FROM released_at) * 1000)::bigint AS released_ms
      FROM assignment_periods
     WHERE device_id = ANY($5::uuid[]) AND assigned_at <= $20::timestamptz AND (released_at IS NULL OR released_at > $19::timestamptz))
  SELECT (SELECT count(*)::int FROM stored) AS stored, p.*
    FROM (SELECT) AS one LEFT JOIN periods p ON true`;

const READING_SELECT = `id, device_id, recorded_at, received_at, seq, ${COLUMNS.join(', ')}`;

type ReadingRecord = Record<string, unknown> & { id: string; device_id: string; recorded_at: Date; received_at: Date; seq: string };

/** SQL of readings (the `readings` table, partitioned by `recorded_at`); the device rows they lock and move are DeviceRepository's. */
@Injectable()
export class ReadingRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly cursors: CursorCodec,
  ) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /**
   * Stores the rows that are new; returns how many it stored (the others' keys were stored already) and
   * the assignment periods of the rows' devices that overlap their time range (see INSERT).
   */
  async insert(manager: EntityManager, scope: AccountScope, receivedAt: Date, rows: ReadingRow[]): Promise<{ stored: number; periods: AssignmentPeriod[] }> {
    if (rows.length === 0) return { stored: 0, periods: [] };
    // Array literals written here: the driver's own conversion escapes every element, a tenth of the DMS's time.
    // Ids, UUIDs, numbers and ISO date-times need no quoting in an array literal.
    const values = COLUMNS.map((_, i) => arrayLiteral(rows, (row) => sqlNumber(row.values[i])));
    const [from, to] = timeRange(rows);
    const result: ({ stored: number } & PeriodRecord)[] = await manager.query(INSERT, [
      scope.tenantId,
      scope.accountId,
      receivedAt,
      arrayLiteral(rows, (row) => row.id),
      arrayLiteral(rows, (row) => row.deviceId),
      ...values,
      arrayLiteral(rows, (row) => row.recordedAtText),
      new Date(from).toISOString(),
      new Date(to).toISOString(),
    ]);
    const periods = result.filter((row) => row.device_id !== null).map(toPeriod);
    return { stored: result[0]?.stored ?? 0, periods };
  }

  /** The stored reading of each of these rows' keys that has one, by key: its id (the row's own when this transaction stored it) and measurements. */
  async findStored(manager: EntityManager, rows: ReadingRow[]): Promise<Map<string, { id: string; values: (number | null)[] }>> {
    if (rows.length === 0) return new Map();
    const found: Record<string, unknown>[] = await manager.query(
      `SELECT r.id, r.device_id, (extract(epoch FROM r.recorded_at) * 1000)::bigint AS recorded_ms, ${COLUMNS.map((c) => `r.${c}`).join(', ')}
         FROM readings r JOIN unnest($1::uuid[], $2::timestamptz[]) AS k (device_id, recorded_at)
           ON r.device_id = k.device_id AND r.recorded_at = k.recorded_at`,
      [rows.map((row) => row.deviceId), rows.map((row) => row.recordedAtText)],
    );
    return new Map(
      found.map((row) => [
        readingKey(row.device_id as string, Number(row.recorded_ms)),
        { id: row.id as string, values: COLUMNS.map((c) => row[c] as number | null) },
      ]),
    );
  }

  /**
   * One page of a device's readings in stored order (`seq`, see `lockDevices`), filtered on `recorded_at`
   * (half-open); the partitions' `(device_id, seq)` indexes give the rows in order.
   */
  async findPage(
    deviceId: string,
    page: PageRequest,
    filters: ReadingFilters,
  ): Promise<{ readings: Reading[]; metadata: PageMetadata }> {
    const binding = cursorBinding('readings', { deviceId, from: filters.from, to: filters.to });
    const conditions = ['device_id = $1'];
    const params: unknown[] = [deviceId];
    if (filters.from !== undefined) {
      params.push(new Date(filters.from).toISOString());
      conditions.push(`recorded_at >= $${params.length}::timestamptz`);
    }
    if (filters.to !== undefined) {
      params.push(new Date(filters.to).toISOString());
      conditions.push(`recorded_at < $${params.length}::timestamptz`);
    }
    const where = conditions.join(' AND ');
    const pageConditions = [...conditions];
    const pageParams = [...params];
    if (page.cursor !== undefined) {
      pageParams.push(this.cursors.decode(binding, page.cursor));
      pageConditions.push(`seq > $${pageParams.length}::bigint`);
    }
    pageParams.push(page.limit + 1);
    const [rows, total] = await Promise.all([
      this.dataSource.query(
        `SELECT ${READING_SELECT} FROM readings WHERE ${pageConditions.join(' AND ')} ORDER BY seq LIMIT $${pageParams.length}`,
        pageParams,
      ) as Promise<ReadingRecord[]>,
      page.includeTotal
        ? (this.dataSource.query(`SELECT count(*)::int AS total FROM readings WHERE ${where}`, params) as Promise<{ total: number }[]>)
        : undefined,
    ]);
    const hasMore = rows.length > page.limit;
    if (hasMore) rows.length = page.limit;
    const last = rows.at(-1);
    const metadata: PageMetadata = { nextCursor: hasMore && last ? this.cursors.encode(binding, String(last.seq)) : null };
    if (total !== undefined) metadata.total = total[0]?.total ?? 0;
    return { readings: rows.map(toReading), metadata };
  }

  /**
   * One page of the readings a shipment's devices recorded within their assignment periods on it
   * (half-open, as a track's), `recorded_at >= from` and after the key `after`, in `(recorded_at,
   * device_id)` order; `limit + 1` rows are read to know whether a next page exists. `shipmentId` is a
   * lower-case UUID.
   *
   * The shipment's periods come from `assignment_periods_shipment_idx`; each period (LATERAL) reads at
   * most `limit + 1` of its device's readings in time order from the partitions' primary keys
   * `(device_id, recorded_at)`: an ordered Append of index scans, pruned at run time to the partitions
   * within the period and from the lower bound on, that stops at the inner LIMIT. Only those rows (at most
   * periods x (limit + 1), a shipment has a few devices) are sorted. The same plan on tables never analyzed
   * as with statistics, custom or generic.
   */
  async findOfShipment(
    scope: AccountScope & { shipmentId: string },
    from: number,
    after: ShipmentReadingKey | undefined,
    limit: number,
  ): Promise<ShipmentReadingsPage> {
    const lower = after === undefined ? from : Math.max(from, after.recordedAt);
    const params: unknown[] = [scope.shipmentId, scope.tenantId, scope.accountId, new Date(lower).toISOString(), limit + 1];
    // The period's end as `< COALESCE(...)` (the same rule as `released_at IS NULL OR recorded_at <
    // released_at`): an index bound that prunes the partitions past it at run time, where the OR was only a
    // filter, and every later partition's index was read for each ended period.
    const conditions = [
      'r.device_id = p.device_id',
      'r.recorded_at >= p.assigned_at',
      "r.recorded_at < COALESCE(p.released_at, 'infinity')",
      'r.recorded_at >= $4::timestamptz',
    ];
    if (after !== undefined) {
      // Within a period the device is fixed: the key excludes at most the one reading at `after.recordedAt`.
      params.push(new Date(after.recordedAt).toISOString(), after.deviceId);
      conditions.push(`(r.recorded_at, r.device_id) > ($6::timestamptz, $7::uuid)`);
    }
    const rows: ReadingRecord[] = await this.dataSource.query(
      `SELECT x.*
         FROM assignment_periods p
         CROSS JOIN LATERAL (
           SELECT ${READING_SELECT} FROM readings r
            WHERE ${conditions.join(' AND ')}
            ORDER BY r.recorded_at
            LIMIT $5) x
        WHERE p.shipment_id = $1::uuid AND p.tenant_id = $2::uuid AND p.account_id = $3::uuid
        ORDER BY x.recorded_at, x.device_id
        LIMIT $5`,
      params,
    );
    const hasMore = rows.length > limit;
    if (hasMore) rows.length = limit;
    const last = rows.at(-1);
    return {
      readings: rows.map(toReading),
      next: hasMore && last ? { recordedAt: last.recorded_at.getTime(), deviceId: last.device_id } : null,
    };
  }
}

/** An assignment period as the INSERT's periods read it (null columns: no period). */
interface PeriodRecord {
  device_id: string | null;
  shipment_id: string;
  assigned_ms: string;
  released_ms: string | null;
}

function toPeriod(row: PeriodRecord): AssignmentPeriod {
  return {
    deviceId: row.device_id ?? '',
    shipmentId: row.shipment_id,
    assignedAt: Number(row.assigned_ms),
    releasedAt: row.released_ms === null ? null : Number(row.released_ms),
  };
}

/** The earliest and the latest `recordedAt` of the rows. */
function timeRange(rows: ReadingRow[]): [number, number] {
  let from = Infinity;
  let to = -Infinity;
  for (const row of rows) {
    if (row.recordedAt < from) from = row.recordedAt;
    if (row.recordedAt > to) to = row.recordedAt;
  }
  return [from, to];
}

/** `{a,b,c}`: a PostgreSQL array literal of elements that need no quoting. */
function arrayLiteral(rows: ReadingRow[], element: (row: ReadingRow) => string): string {
  let text = '{';
  rows.forEach((row, i) => (text += (i === 0 ? '' : ',') + element(row)));
  return `${text}}`;
}

export function readingKey(deviceId: string, recordedAt: number): string {
  return `${deviceId}|${recordedAt}`;
}

function toReading(row: ReadingRecord): Reading {
  const value = (column: string) => (row[column] as number | null) ?? null;
  const lat = value('lat');
  const lng = value('lng');
  return {
    id: row.id,
    deviceId: row.device_id,
    recordedAt: row.recorded_at.toISOString(),
    receivedAt: row.received_at.toISOString(),
    location:
      lat === null || lng === null
        ? null
        : {
            lat,
            lng,
            accuracyMeters: value('accuracy_meters'),
            altitudeMeters: value('altitude_meters'),
            speedMps: value('speed_mps'),
            headingDegrees: value('heading_degrees'),
          },
    temperatureC: value('temperature_c'),
    humidityPercent: value('humidity_percent'),
    shockG: value('shock_g'),
    lightLux: value('light_lux'),
    batteryPercent: value('battery_percent'),
    pressureHpa: value('pressure_hpa'),
  };
}

/** A number (or null) as an element of a PostgreSQL array literal. */
function sqlNumber(value: number | null | undefined): string {
  return value === null || value === undefined ? 'NULL' : String(value);
}

/** Keys of the measurements in a published reading, by their index in `ReadingRow.values` (`READING_VALUES`). */
const LOCATION_KEYS = [',"accuracyMeters":', ',"altitudeMeters":', ',"speedMps":', ',"headingDegrees":'];
const MEASUREMENT_KEYS = [',"temperatureC":', ',"humidityPercent":', ',"shockG":', ',"lightLux":', ',"batteryPercent":', ',"pressureHpa":'];

/**
 * A stored reading as the readings stream publishes it (docs/readings.md, "Publication"): the API's
 * reading without `deviceId` and `receivedAt` (its group's and its message's) and without the fields that
 * are null, written directly. Building an object per reading and stringifying it was a tenth of the
 * DMS's time, and the full API shape made the message (written to the outbox, published, read by every
 * consumer) about twice as large for a tracker that reports a few measurements.
 */
export function publishedReadingJson(row: ReadingRow): string {
  const v = row.values;
  let json = `{"id":"${row.id}","recordedAt":"${row.recordedAtText}"`;
  const lat = v[0];
  const lng = v[1];
  if (lat != null && lng != null) {
    json += `,"location":{"lat":${lat},"lng":${lng}`;
    for (let i = 0; i < LOCATION_KEYS.length; i++) {
      const value = v[i + 2];
      if (value != null) json += `${LOCATION_KEYS[i]}${value}`;
    }
    json += '}';
  }
  for (let i = 0; i < MEASUREMENT_KEYS.length; i++) {
    const value = v[i + 6];
    if (value != null) json += `${MEASUREMENT_KEYS[i]}${value}`;
  }
  return `${json}}`;
}
