/* eslint-disable @typescript-eslint/no-non-null-assertion -- loops over parallel arrays indexed within their lengths: `!` states the bound the loop checks, which noUncheckedIndexedAccess cannot see. */
import { Injectable } from '@nestjs/common';
import type { TrackRequest } from '@tracking/contracts';
import { DataSource } from 'typeorm';

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
 * The readings and assignment periods read together for a track (docs/tracks.md).
 *
 * Speed machinery (docs/architecture.md): a track reads up to a few hundred thousand positions, and
 * one row per position cost more in the driver than in PostgreSQL (a row object, four parsed values).
 * So each period answers one row holding four arrays (`array_agg`, no sort) in PostgreSQL's binary
 * array format (`array_send`: no number is written as text), decoded here. (node-postgres' own binary
 * mode cannot carry them: it decodes every field as UTF-8 text.) The simple version: one row per position with TypeORM's `query`.
 */
@Injectable()
export class TrackRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * The positions each device of the shipment recorded within its periods on it (half-open on both the
   * period and the request's window), devices in id order. The shipment's periods come from
   * `assignment_periods_shipment_idx`, each period's readings from the partitions' primary keys
   * `(device_id, recorded_at)`, which give them in time order; the order is checked here all the same.
   */
  async findPositions(request: TrackRequest): Promise<DevicePositions[]> {
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
    const rows: { device_id: string; t: Buffer; lat: Buffer; lng: Buffer; accuracy: Buffer }[] = await this.dataSource.query(
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
    const devices: DevicePositions[] = [];
    for (const { device_id: id, t, lat, lng, accuracy } of rows) {
      let device = devices.at(-1);
      if (device?.deviceId !== id) devices.push((device = { deviceId: id, t: [], lat: [], lng: [], accuracyMeters: [] }));
      // A device's later period on the same shipment follows its earlier one.
      decodeArray(t, (buffer, at) => device.t.push(Math.floor((buffer.readInt32BE(at) * 4294967296 + buffer.readUInt32BE(at + 4)) / 1000) + POSTGRES_EPOCH_MS));
      decodeArray(lat, (buffer, at) => device.lat.push(buffer.readDoubleBE(at)));
      decodeArray(lng, (buffer, at) => device.lng.push(buffer.readDoubleBE(at)));
      decodeArray(accuracy, (buffer, at) => device.accuracyMeters.push(at < 0 ? null : buffer.readDoubleBE(at)));
    }
    for (const device of devices) inTimeOrder(device);
    return devices;
  }
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
