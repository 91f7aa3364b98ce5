/* eslint-disable @typescript-eslint/no-non-null-assertion -- loops over parallel arrays indexed within their lengths: `!` states the bound the loop checks, which noUncheckedIndexedAccess cannot see. */
import { Injectable } from '@nestjs/common';
import { ErrorCode, type TrackRequest } from '@tracking/contracts';
import { currentDeadline, DomainError } from '@tracking/core';
import { isPgError } from '@tracking/database';
import type { DataSource, EntityManager } from 'typeorm';

/** One device's positions within its periods on the shipment, in `recordedAt` order. */
export interface DevicePositions {
  deviceId: string;
  t: number[];
  lat: number[];
  lng: number[];
  accuracyMeters: (number | null)[];
}

/** Microseconds from the Unix epoch to PostgreSQL's (2000-01-01), over 1000. */
const POSTGRES_EPOCH_MS = 946_684_800_000;

/**
 * Up to this many positions a track is read whole; above it, a time sample of about this many (also at
 * least `SAMPLE_PER_POINT` per point asked for). Douglas-Peucker then keeps `maxPoints` of what was read.
 */
export const TRACK_FULL_READ_POSITIONS = 2000;
/** Positions sampled per point of `maxPoints`, when the track is sampled (docs/tracks.md, "Cost"). */
export const SAMPLE_PER_POINT = 4;
/** Time kept between the statement's end and the caller's deadline, for the reply to reach it. */
export const DEADLINE_MARGIN_MS = 50;

/** What a track request reads: positions (all of them, or a time sample) and how many the window holds. */
export interface TrackPositions {
  devices: DevicePositions[];
  /** Positions in the window, whether read or only counted. */
  totalPoints: number;
  /** Whether `devices` holds a time sample rather than every position. */
  sampled: boolean;
}

/** One period of a device on the shipment with positions in the window: their number and first and last instants. */
interface PeriodSummary {
  device_id: string;
  n: number;
  /** Timestamps as PostgreSQL prints them (microseconds), passed back unchanged as bucket bounds. */
  first_at: string;
  last_at: string;
}

/**
 * The readings and assignment periods read together for a track (docs/tracks.md).
 *
 * Cost bound (docs/tracks.md, "Cost"): the positions are first counted per period, then read whole
 * when they fit `sampleSize(maxPoints)`, or else sampled: each period's time range is cut into
 * buckets (as many, over all periods, as the sample size, shared in proportion to the positions) and
 * each bucket answers its first position by one index probe, plus each period's last position. So what
 * PostgreSQL returns, and the DMS decodes and simplifies, grows with `maxPoints`, not with the
 * positions stored; only the count visits every position of the window. The statements run in one
 * transaction, each under a `statement_timeout` of the time left when it starts, so that the read ends
 * before the caller's deadline (`currentDeadline`) less `DEADLINE_MARGIN_MS`.
 *
 * Speed machinery (docs/architecture.md): one row per position cost more in the driver than in
 * PostgreSQL (a row object, four parsed values). So each period answers one row holding four arrays
 * in PostgreSQL's binary array format (`array_send`: no number is written as text), decoded here.
 * (node-postgres' own binary mode cannot carry them: it decodes every field as UTF-8 text.) The simple
 * version: one row per position with TypeORM's `query`.
 */
@Injectable()
export class TrackRepository {
  constructor(
    private readonly dataSource: DataSource,
    /** The longest a read runs, all its statements together, and its bound when the caller gave no deadline (ms). */
    private readonly defaultTimeoutMs: number,
  ) {}

  /**
   * The positions each device of the shipment recorded within its periods on it (half-open on both the
   * period and the request's window), devices in id order, all of them or a time sample of
   * `sampleSize(request.maxPoints)`. The shipment's periods come from `assignment_periods_shipment_idx`,
   * each period's readings from the partitions' primary keys `(device_id, recorded_at)`, which give them
   * in time order; the order is checked here all the same. Fails with `GatewayTimeout` when the caller's
   * deadline passes first: PostgreSQL cancels the statement, nothing of it runs on.
   */
  async findPositions(request: TrackRequest): Promise<TrackPositions> {
    const deadline = readDeadline(this.defaultTimeoutMs);
    try {
      return await this.dataSource.transaction(async (manager) => {
        const query = <T>(sql: string, parameters: unknown[]) => bounded<T>(manager, deadline, sql, parameters);
        const { params, periods, readings } = conditions(request);
        const summaries = await query<PeriodSummary[]>(
          `SELECT p.device_id, x.n, x.first_at::text AS first_at, x.last_at::text AS last_at
             FROM assignment_periods p
                  CROSS JOIN LATERAL (
                    SELECT count(*)::int AS n, min(r.recorded_at) AS first_at, max(r.recorded_at) AS last_at
                      FROM readings r
                     WHERE ${readings.join(' AND ')}) x
            WHERE ${periods.join(' AND ')} AND x.n > 0
            ORDER BY p.device_id, p.assigned_at`,
          params,
        );
        const totalPoints = summaries.reduce((sum, period) => sum + period.n, 0);
        const size = sampleSize(request.maxPoints);
        if (totalPoints <= size) {
          const rows = await query<PeriodArrays[]>(
            `SELECT p.device_id, array_send(x.t) AS t, array_send(x.lat) AS lat, array_send(x.lng) AS lng,
                    array_send(x.accuracy) AS accuracy
               FROM assignment_periods p
                    CROSS JOIN LATERAL (
                      SELECT array_agg(r.recorded_at) AS t, array_agg(r.lat) AS lat, array_agg(r.lng) AS lng,
                             array_agg(r.accuracy_meters) AS accuracy
                        FROM readings r
                       WHERE ${readings.join(' AND ')}) x
              WHERE ${periods.join(' AND ')} AND x.t IS NOT NULL
              ORDER BY p.device_id, p.assigned_at`,
            params,
          );
          return { devices: decodePeriods(rows), totalPoints, sampled: false };
        }
        // Buckets per period in proportion to its positions, at least one, cut in seconds (an interval of
        // days would move with daylight saving time); bucket k is the period's last position.
        const buckets = summaries.map((period) => Math.max(1, Math.floor((size * period.n) / totalPoints)));
        const rows = await query<PeriodArrays[]>(
          `SELECT s.device_id, array_send(array_agg(x.recorded_at ORDER BY b.n)) AS t,
                  array_send(array_agg(x.lat ORDER BY b.n)) AS lat, array_send(array_agg(x.lng ORDER BY b.n)) AS lng,
                  array_send(array_agg(x.accuracy_meters ORDER BY b.n)) AS accuracy
             FROM (SELECT u.*, extract(epoch FROM u.hi - u.lo)::float8 AS span
                     FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::int[]) WITH ORDINALITY AS u(device_id, lo, hi, k, i)) s
                  CROSS JOIN LATERAL (
                    SELECT g.n,
                           CASE WHEN g.n < s.k THEN s.lo + make_interval(secs => s.span * g.n / s.k) ELSE s.hi END AS start_at,
                           CASE WHEN g.n + 1 < s.k THEN s.lo + make_interval(secs => s.span * (g.n + 1) / s.k)
                                WHEN g.n + 1 = s.k THEN s.hi
                                ELSE s.hi + interval '1 microsecond' END AS stop_at
                      FROM generate_series(0, s.k) AS g(n)) b
                  CROSS JOIN LATERAL (
                    SELECT r.recorded_at, r.lat, r.lng, r.accuracy_meters
                      FROM readings r
                     WHERE r.device_id = s.device_id AND r.recorded_at >= b.start_at AND r.recorded_at < b.stop_at
                       AND r.lat IS NOT NULL
                     ORDER BY r.recorded_at
                     LIMIT 1) x
            GROUP BY s.i, s.device_id
            ORDER BY s.i`,
          [summaries.map((period) => period.device_id), summaries.map((period) => period.first_at), summaries.map((period) => period.last_at), buckets],
        );
        return { devices: decodePeriods(rows), totalPoints, sampled: true };
      });
    } catch (error) {
      if (isPgError(error, '57014') || isPgError((error as { driverError?: unknown } | null)?.driverError, '57014')) {
        throw new DomainError(ErrorCode.GatewayTimeout, "The track was not read before the request's deadline; narrow the window or retry later.");
      }
      throw error;
    }
  }
}

/** Positions read for a track of `maxPoints`: every position up to it, else a time sample of it. */
export function sampleSize(maxPoints: number): number {
  return Math.max(TRACK_FULL_READ_POSITIONS, SAMPLE_PER_POINT * maxPoints);
}

/**
 * When a track read must have ended (epoch ms): the caller's deadline less the margin for the reply, or
 * `defaultMs` from now when the caller gave none, whichever comes first. A deadline already passed fails
 * at once.
 */
function readDeadline(defaultMs: number): number {
  const now = Date.now();
  const callers = currentDeadline();
  const deadline = callers === undefined ? now + defaultMs : Math.min(now + defaultMs, callers - DEADLINE_MARGIN_MS);
  if (deadline - now < 1) throw new DomainError(ErrorCode.GatewayTimeout, "The request's deadline passed before its track was read; retry later.");
  return deadline;
}

/**
 * Runs one statement of a track read under `SET LOCAL statement_timeout` of the time left before
 * `deadline`: each statement gets what is left when it starts, not the whole, so that a read of two
 * statements ends by the deadline rather than twice as late. Fails at once when no time is left.
 *
 * The setting and the statement are handed to the connection together: node-postgres queues the
 * statement and sends it as soon as the setting's answer arrives, so a busy event loop here cannot
 * start it later than the time left was counted for.
 */
async function bounded<T>(manager: EntityManager, deadline: number, sql: string, parameters: unknown[]): Promise<T> {
  const left = Math.floor(deadline - Date.now());
  if (left < 1) throw new DomainError(ErrorCode.GatewayTimeout, "The track was not read before the request's deadline; narrow the window or retry later.");
  const [, rows] = await Promise.all([manager.query(`SELECT set_config('statement_timeout', $1, true)`, [`${left}ms`]), manager.query(sql, parameters)]);
  return rows as T;
}

/** The parameters and conditions on the shipment's periods and on their readings. */
function conditions(request: TrackRequest): { params: unknown[]; periods: string[]; readings: string[] } {
  const params: unknown[] = [request.shipmentId, request.tenantId, request.accountId];
  const periods = ['p.shipment_id = $1', 'p.tenant_id = $2', 'p.account_id = $3'];
  // The period's end as an index bound (the rule of `released_at IS NULL OR recorded_at < released_at`):
  // run-time pruning then skips every partition after an ended period, where the OR, only a filter, had
  // each later partition's index probed (a period ended 20 days ago among 30 daily partitions: 326 -> 71
  // buffers, 2.1 -> 0.3 ms).
  const readings = ['r.device_id = p.device_id', 'r.recorded_at >= p.assigned_at', "r.recorded_at < COALESCE(p.released_at, 'infinity')", 'r.lat IS NOT NULL'];
  if (request.deviceId !== undefined) {
    params.push(request.deviceId);
    periods.push(`p.device_id = $${params.length}::uuid`);
  }
  if (request.from !== undefined) {
    params.push(new Date(request.from).toISOString());
    readings.push(`r.recorded_at >= $${params.length}::timestamptz`);
  }
  if (request.to !== undefined) {
    params.push(new Date(request.to).toISOString());
    readings.push(`r.recorded_at < $${params.length}::timestamptz`);
  }
  return { params, periods, readings };
}

/** One period's positions as four arrays in PostgreSQL's binary format. */
interface PeriodArrays {
  device_id: string;
  t: Buffer;
  lat: Buffer;
  lng: Buffer;
  accuracy: Buffer;
}

/** The periods' arrays decoded, a device's periods joined (its later period follows its earlier one). */
function decodePeriods(rows: PeriodArrays[]): DevicePositions[] {
  const devices: DevicePositions[] = [];
  for (const { device_id: id, t, lat, lng, accuracy } of rows) {
    let device = devices.at(-1);
    if (device?.deviceId !== id) devices.push((device = { deviceId: id, t: [], lat: [], lng: [], accuracyMeters: [] }));
    decodeArray(t, (buffer, at) => device.t.push(Math.floor((buffer.readInt32BE(at) * 4294967296 + buffer.readUInt32BE(at + 4)) / 1000) + POSTGRES_EPOCH_MS));
    decodeArray(lat, (buffer, at) => device.lat.push(buffer.readDoubleBE(at)));
    decodeArray(lng, (buffer, at) => device.lng.push(buffer.readDoubleBE(at)));
    decodeArray(accuracy, (buffer, at) => device.accuracyMeters.push(at < 0 ? null : buffer.readDoubleBE(at)));
  }
  for (const device of devices) inTimeOrder(device);
  return devices;
}

/**
 * Walks a one-dimensional array in PostgreSQL's binary format (`array_send`): a header of dimensions,
 * then each element as a 4-byte length (-1: null) and its bytes. `read` gets each element's offset, or
 * -1 for a null.
 */
function decodeArray(buffer: Buffer, read: (buffer: Buffer, at: number) => void): void {
  const dimensions = buffer.readInt32BE(0);
  if (dimensions === 0) return;
  const count = buffer.readInt32BE(12);
  let at = 12 + dimensions * 8;
  for (let i = 0; i < count; i++) {
    const length = buffer.readInt32BE(at);
    at += 4;
    if (length < 0) read(buffer, -1);
    else {
      read(buffer, at);
      at += length;
    }
  }
}

/** Sorts a device's positions by time unless they came sorted, as the index gives them. */
function inTimeOrder(device: DevicePositions): void {
  let sorted = true;
  for (let i = 1; i < device.t.length && sorted; i++) sorted = device.t[i - 1]! <= device.t[i]!;
  if (sorted) return;
  const order = device.t.map((_, i) => i).sort((a, b) => device.t[a]! - device.t[b]!);
  device.t = order.map((i) => device.t[i]!);
  device.lat = order.map((i) => device.lat[i]!);
  device.lng = order.map((i) => device.lng[i]!);
  device.accuracyMeters = order.map((i) => device.accuracyMeters[i]!);
}
