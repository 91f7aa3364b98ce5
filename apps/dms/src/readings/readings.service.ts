import { Inject, Injectable } from '@nestjs/common';
import {
  ErrorCode,
  type IngestEntry,
  type IngestReadingsRequest,
  type IngestResult,
  type ListReadingsRequest,
  MAX_SHIPMENT_READINGS_LIMIT,
  ParameterIssue,
  type Reading,
  type ReadingPage,
  ReadingSubjects,
  ReadingValue,
  type RejectedReading,
  type ShipmentReadingsPage,
  type ShipmentReadingsRequest,
} from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { type OutboxMessage, readingsPartitionOf, writeOutbox } from '@tracking/outbox';
import { validate as isUuid } from 'uuid';
import { DeviceRepository, type IngestDevice, type LastKnown } from '../devices/device.repository.js';
import { type AssignmentPeriod, ReadingRepository, type ReadingRow, publishedReadingJson, readingKey } from './reading.repository.js';
import { ReadingPartitions } from './reading-partitions.js';
import { uuidV7s } from './uuid-v7.js';
import type { DmsConfig } from '../config.js';
import { DMS_CONFIG } from '../tokens.js';

/** How far ahead of the DMS's clock a device's clock may be. */
export const MAX_FUTURE_MS = 5 * 60_000;

/** What became of an entry whose key was stored before its batch (every other usable, timely entry is accepted). */
type Fate = 'duplicate' | 'conflict';

/**
 * Ingest of readings (docs/readings.md): each chunk of a batch in one transaction, entries judged one by
 * one, the new ones stored by one `INSERT ... unnest ... ON CONFLICT DO NOTHING`, and the devices' last
 * known fields moved forward in the same transaction.
 */
@Injectable()
export class ReadingsService {
  constructor(
    private readonly readings: ReadingRepository,
    private readonly devices: DeviceRepository,
    private readonly partitions: ReadingPartitions,
    @Inject(DMS_CONFIG) private readonly config: DmsConfig,
  ) {}

  async ingest(request: IngestReadingsRequest): Promise<IngestResult> {
    const now = Date.now();
    const receivedAt = new Date(now);
    const rejected: RejectedReading[] = [];
    const cutoff = this.partitions.retentionCutoff(now);
    const timely = request.entries.filter((entry) => {
      const error = timeError(entry, now, cutoff);
      if (error) rejected.push({ index: entry.index, error });
      return !error;
    });
    await this.partitions.ensure(timely.map((entry) => entry.recordedAt));

    const result = await this.readings.transaction(async (manager) => {
      const deviceIds = new Set<string>();
      const serialNumbers = new Set<string>();
      for (const entry of timely) {
        if (entry.deviceId !== undefined) deviceIds.add(entry.deviceId);
        else if (entry.serialNumber !== undefined) serialNumbers.add(entry.serialNumber);
      }
      const devices = await this.devices.lockForReadings(manager, request, [...deviceIds], [...serialNumbers]);
      const byId = new Map(devices.map((device) => [device.id, device]));
      const bySerial = new Map(devices.map((device) => [device.serialNumber, device]));

      // Entries of one key after the first follow the first (same content) or conflict with it.
      const first = new Map<string, { entry: IngestEntry; row: ReadingRow }>();
      const repeats: { entry: IngestEntry; key: string }[] = [];
      for (const entry of timely) {
        const device = entry.deviceId !== undefined ? byId.get(entry.deviceId) : bySerial.get(entry.serialNumber ?? '');
        const error = deviceError(entry, device);
        if (error || !device) {
          rejected.push({ index: entry.index, error: error ?? unknownDevice(entry) });
          continue;
        }
        const key = readingKey(device.id, entry.recordedAt);
        if (first.has(key)) repeats.push({ entry, key });
        else first.set(key, { entry, row: { id: '', deviceId: device.id, recordedAt: entry.recordedAt, recordedAtText: '', values: entry.values } });
      }
      const ids = uuidV7s(first.size, now);
      let next = 0;
      for (const { row } of first.values()) {
        row.id = ids[next++] ?? '';
        row.recordedAtText = new Date(row.recordedAt).toISOString();
      }

      const rows = [...first.values()].map(({ row }) => row);
      const storedCount = await this.readings.insert(manager, request, receivedAt, rows);
      // Every row stored (the usual case), or some keys were stored before: which, from the stored readings' ids.
      const existing = storedCount === rows.length ? undefined : await this.readings.findStored(manager, rows);
      // The keys stored before this batch, each a duplicate (same measurements) or a conflict; the rest are accepted.
      const fates = new Map<string, Fate>();
      if (existing) {
        for (const [key, { entry, row }] of first) {
          const stored = existing.get(key);
          if (!stored || stored.id === row.id) continue;
          const fate: Fate = sameValues(stored.values, row.values) ? 'duplicate' : 'conflict';
          fates.set(key, fate);
          if (fate === 'conflict') rejected.push({ index: entry.index, error: conflicting(entry, 'a stored reading') });
        }
      }
      let duplicates = [...fates.values()].filter((fate) => fate === 'duplicate').length;
      for (const { entry, key } of repeats) {
        const original = first.get(key);
        if (fates.get(key) !== 'conflict' && sameValues(original?.row.values, entry.values)) duplicates += 1;
        else rejected.push({ index: entry.index, error: conflicting(entry, `entry ${original?.entry.index ?? '?'} of the batch`) });
      }

      const accepted = fates.size === 0 ? rows : rows.filter((row) => !fates.has(readingKey(row.deviceId, row.recordedAt)));
      await this.devices.moveLastKnown(manager, lastKnown(accepted));
      // Published once, after the commit, by the outbox relay (docs/readings.md, "Publication").
      const periods = accepted.length === 0 ? [] : await this.readings.periodsDuring(manager, [...new Set(accepted.map((row) => row.deviceId))], ...timeRange(accepted));
      await writeOutbox(manager, publications(request, accepted, periods, receivedAt, this.config.READINGS_PARTITIONS));
      return { accepted: accepted.length, duplicates };
    });
    rejected.sort((a, b) => a.index - b.index);
    return { ...result, rejected };
  }

  async list(request: ListReadingsRequest): Promise<ReadingPage> {
    if (!(await this.devices.findOne(request, request.deviceId))) {
      throw new DomainError(ErrorCode.DeviceNotExists, `Device ${request.deviceId} does not exist.`);
    }
    return this.readings.findPage(request.deviceId, request.page, request.filters);
  }

  /**
   * A page of the readings a shipment's devices recorded while assigned to it (the OMS restores a
   * shipment's geofence evaluation from them). An internal call: an unknown shipment, or an id that is
   * not a UUID, has no periods and so an empty page.
   */
  async ofShipment(request: ShipmentReadingsRequest): Promise<ShipmentReadingsPage> {
    const { limit, from, after } = request;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SHIPMENT_READINGS_LIMIT) {
      throw DomainError.invalidParameter('limit', ParameterIssue.OutOfRange, `limit must be an integer from 1 to ${MAX_SHIPMENT_READINGS_LIMIT}.`);
    }
    if (!isFiniteNumber(from)) throw DomainError.invalidParameter('from', ParameterIssue.InvalidFormat, 'from must be a finite number (epoch ms).');
    if (after !== undefined && (after === null || !isFiniteNumber(after.recordedAt) || typeof after.deviceId !== 'string' || !isUuid(after.deviceId))) {
      throw DomainError.invalidParameter('after', ParameterIssue.InvalidFormat, 'after must be the next key of a previous page: {recordedAt, deviceId}.');
    }
    if (typeof request.shipmentId !== 'string' || !isUuid(request.shipmentId)) return { readings: [], next: null };
    const key = after === undefined ? undefined : { recordedAt: clampInstant(after.recordedAt), deviceId: after.deviceId.toLowerCase() };
    const page = await this.readings.findOfShipment({ ...request, shipmentId: request.shipmentId.toLowerCase() }, clampInstant(from), key, limit);
    return withinReplyBudget(page);
  }
}

/**
 * The readings of a shipment page's reply stay under this much JSON, so that the reply fits NATS's
 * default max_payload (1 MiB) with room for its envelope whatever `limit` asked: a reading is some 250 to
 * 650 bytes, the more the more precise its doubles, so 2000 of them may not fit.
 */
export const MAX_SHIPMENT_READINGS_BYTES = 768 * 1024;

/** Ends the page early, with its last kept reading as `next`, where its readings outgrow MAX_SHIPMENT_READINGS_BYTES. */
function withinReplyBudget(page: ShipmentReadingsPage): ShipmentReadingsPage {
  let size = 0;
  let previous: Reading | undefined;
  for (const [i, reading] of page.readings.entries()) {
    size += JSON.stringify(reading).length + 1;
    if (size > MAX_SHIPMENT_READINGS_BYTES && previous) {
      return { readings: page.readings.slice(0, i), next: { recordedAt: Date.parse(previous.recordedAt), deviceId: previous.deviceId } };
    }
    previous = reading;
  }
  return page;
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** 9999-12-31T23:59:59.999Z, the last instant an ISO date-time writes with four digits. */
const LAST_INSTANT = 253_402_300_799_999;

/**
 * An instant within [1970, 9999], which `Date` and PostgreSQL both take: exact for the bounds of a
 * readings query, since no stored reading lies outside it (the retention and the 5 minutes ahead).
 */
function clampInstant(epochMs: number): number {
  return Math.min(Math.max(epochMs, 0), LAST_INSTANT);
}

function timeError(entry: IngestEntry, now: number, cutoff: number): RejectedReading['error'] | undefined {
  const field = `readings.${entry.index}.recordedAt`;
  if (entry.recordedAt > now + MAX_FUTURE_MS) {
    return outOfRange(field, `${field} lies more than 5 minutes ahead of the server's clock.`);
  }
  if (entry.recordedAt < cutoff) {
    return outOfRange(field, `${field} is older than the retention of readings (${new Date(cutoff).toISOString()}).`);
  }
  return undefined;
}

function deviceError(entry: IngestEntry, device: IngestDevice | undefined): RejectedReading['error'] | undefined {
  if (!device) return unknownDevice(entry);
  if (device.retired) return { code: ErrorCode.DeviceRetired, message: `Device ${device.id} is retired; it takes no more readings.` };
  return undefined;
}

function unknownDevice(entry: IngestEntry): RejectedReading['error'] {
  const name = entry.deviceId !== undefined ? `Device ${entry.deviceId}` : `No device with serial number ${JSON.stringify(entry.serialNumber)}`;
  return { code: ErrorCode.DeviceNotExists, message: `${name} does not exist in this account.` };
}

function outOfRange(field: string, message: string): RejectedReading['error'] {
  return { code: ErrorCode.InvalidParameter, message, details: { field, issue: ParameterIssue.OutOfRange } };
}

function conflicting(entry: IngestEntry, other: string): RejectedReading['error'] {
  const field = `readings.${entry.index}.recordedAt`;
  return {
    code: ErrorCode.InvalidParameter,
    message: `${field}: ${other} of this device at this recordedAt has other measurements; a reading cannot change once stored.`,
    details: { field, issue: ParameterIssue.ConflictingReading },
  };
}

/** Measurements compare exactly: the stored doubles are the numbers the client sent. */
function sameValues(a: (number | null)[] | undefined, b: (number | null)[]): boolean {
  return a !== undefined && a.length === b.length && a.every((value, i) => value === b[i]);
}

/**
 * A message's readings JSON stays under this size, so that a message fits NATS's default max_payload
 * (1 MiB) with room to spare: a device with more readings in one chunk gets several messages.
 */
export const MAX_PUBLICATION_BYTES = 512 * 1024;

/**
 * The outbox messages of a chunk's stored readings: one per partition of the readings stream that the
 * chunk's shipments fall in (more when one outgrows MAX_PUBLICATION_BYTES), on that partition's subject
 * (`readingsPartitionOf` of the shipment; readings recorded on no shipment go on `none`), its readings
 * grouped by device and by the shipment the device was on when it recorded them, each group in
 * recordedAt order. Per partition rather than per device: the relay's publish and every consumer's
 * delivery and acknowledgement are per message, and per device they were about half of the DMS's CPU
 * under ingest (docs/readings.md, "Publication").
 */
function publications(scope: IngestReadingsRequest, rows: ReadingRow[], periods: AssignmentPeriod[], receivedAt: Date, partitionCount: number): OutboxMessage[] {
  const periodsOf = new Map<string, AssignmentPeriod[]>();
  for (const period of periods) {
    const list = periodsOf.get(period.deviceId);
    if (list) list.push(period);
    else periodsOf.set(period.deviceId, [period]);
  }
  const groups = new Map<string, { deviceId: string; shipmentId: string | null; rows: ReadingRow[] }>();
  for (const row of rows) {
    const shipmentId = shipmentAt(periodsOf.get(row.deviceId) ?? [], row.recordedAt);
    const key = `${row.deviceId}|${shipmentId ?? ''}`;
    const group = groups.get(key);
    if (group) group.rows.push(row);
    else groups.set(key, { deviceId: row.deviceId, shipmentId, rows: [row] });
  }
  const byPartition = new Map<number | 'none', { deviceId: string; shipmentId: string | null; rows: ReadingRow[] }[]>();
  for (const group of groups.values()) {
    const partition = group.shipmentId === null ? 'none' : readingsPartitionOf(group.shipmentId, partitionCount);
    const list = byPartition.get(partition);
    if (list) list.push(group);
    else byPartition.set(partition, [group]);
  }
  const head =
    `{"tenantId":${JSON.stringify(scope.tenantId)},"accountId":${JSON.stringify(scope.accountId)},` +
    `"receivedAt":"${receivedAt.toISOString()}","devices":[`;
  const messages: { subject: string; payload: string }[] = [];
  for (const [partition, partitionGroups] of byPartition) {
    const subject = ReadingSubjects.of('', scope.tenantId, scope.accountId, partition);
    let done: string[] = [];
    let size = 0;
    for (const { deviceId, shipmentId, rows: list } of partitionGroups) {
      list.sort((a, b) => a.recordedAt - b.recordedAt);
      const groupHead = `{"deviceId":${JSON.stringify(deviceId)},"shipmentId":${JSON.stringify(shipmentId)},"readings":[`;
      let parts: string[] = [];
      const close = () => {
        if (parts.length > 0) done.push(`${groupHead}${parts.join(',')}]}`);
        parts = [];
      };
      for (const row of list) {
        const json = publishedReadingJson(row);
        if (size > 0 && size + json.length > MAX_PUBLICATION_BYTES) {
          close();
          messages.push({ subject, payload: `${head}${done.join(',')}]}` });
          done = [];
          size = 0;
        }
        parts.push(json);
        size += json.length + 1;
      }
      close();
    }
    if (done.length > 0) messages.push({ subject, payload: `${head}${done.join(',')}]}` });
  }
  const ids = uuidV7s(messages.length);
  return messages.map((message, index) => ({ id: ids[index] ?? '', ...message }));
}

/** The shipment a device was on at `at`, from its periods (half-open), or null. */
function shipmentAt(periods: AssignmentPeriod[], at: number): string | null {
  for (const period of periods) {
    if (period.assignedAt <= at && (period.releasedAt === null || at < period.releasedAt)) return period.shipmentId;
  }
  return null;
}

function timeRange(rows: ReadingRow[]): [number, number] {
  let from = Infinity;
  let to = -Infinity;
  for (const row of rows) {
    if (row.recordedAt < from) from = row.recordedAt;
    if (row.recordedAt > to) to = row.recordedAt;
  }
  return [from, to];
}

/** Per device, the newest stored reading overall, with a location, and with a battery level. */
function lastKnown(rows: ReadingRow[]): LastKnown[] {
  const byDevice = new Map<string, LastKnown>();
  for (const row of rows) {
    let known = byDevice.get(row.deviceId);
    if (!known) {
      known = { deviceId: row.deviceId, seenAt: row.recordedAt, location: null, battery: null };
      byDevice.set(row.deviceId, known);
    }
    known.seenAt = Math.max(known.seenAt, row.recordedAt);
    const lat = row.values[ReadingValue.Lat];
    const lng = row.values[ReadingValue.Lng];
    if (lat != null && lng != null && (known.location === null || row.recordedAt > known.location.at)) {
      known.location = { at: row.recordedAt, lat, lng, accuracyMeters: row.values[ReadingValue.AccuracyMeters] ?? null };
    }
    const battery = row.values[ReadingValue.BatteryPercent];
    if (battery != null && (known.battery === null || row.recordedAt > known.battery.at)) {
      known.battery = { at: row.recordedAt, level: battery };
    }
  }
  return [...byDevice.values()];
}
