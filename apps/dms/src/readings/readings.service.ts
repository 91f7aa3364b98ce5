import { Inject, Injectable } from '@nestjs/common';
import {
  type AccountScope,
  type DeviceSubmissionOutcome,
  ErrorCode,
  type IngestDeviceReadingsRequest,
  type IngestDeviceReadingsResult,
  type IngestEntry,
  type IngestReadingsRequest,
  type IngestResult,
  type ListReadingsRequest,
  MAX_SHIPMENT_READINGS_LIMIT,
  ParameterIssue,
  type Reading,
  type ReadingPage,
  ReadingSubjects,
  type RejectedReading,
  type ShipmentReadingsPage,
  type ShipmentReadingsRequest,
} from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { type OutboxMessage, readingsPartitionOf, writeOutbox } from '@tracking/outbox';
import type { EntityManager } from 'typeorm';
import { validate as isUuid } from 'uuid';
import { CredentialRepository } from '../credentials/credential.repository.js';
import { DeviceRepository, type IngestDevice } from '../devices/device.repository.js';
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
    private readonly credentials: CredentialRepository,
    @Inject(DMS_CONFIG) private readonly config: DmsConfig,
  ) {}

  async ingest(request: IngestReadingsRequest): Promise<IngestResult> {
    const now = Date.now();
    const rejected: RejectedReading[] = [];
    const timely = this.timely(request.entries, now, API_NAMES, rejected);
    await this.partitions.ensure(timely.map((entry) => entry.recordedAt));
    const fates = await this.readings.transaction((manager) => this.store(manager, request, timely, now, API_NAMES, rejected));
    rejected.sort((a, b) => a.index - b.index);
    return { accepted: fates.accepted.length, duplicates: fates.duplicates.length, unassigned: fates.unassigned.length, rejected };
  }

  /**
   * Many devices' messages from the device gateway (docs/device-gateway.md), stored in one transaction
   * exactly as `ingest` stores a batch: each submission whose credential is no longer live (deleted, its
   * device retired or deleted, or no longer in the submission's account) is `revoked` and nothing of it
   * is stored. The credentials are read by the statement that locks their devices, in id order across
   * the batch's accounts (`lockForSubmissions`: the global order `lockForReadings` keeps too, so
   * concurrent batches cannot deadlock); a device retired or deleted meanwhile is seen under its row lock.
   * Then each account's entries are stored by `store` on the devices already locked.
   */
  async ingestFromDevices(request: IngestDeviceReadingsRequest): Promise<IngestDeviceReadingsResult> {
    const now = Date.now();
    const submissions = request.submissions;
    if (!Array.isArray(submissions) || submissions.some((submission) => !Array.isArray(submission?.entries))) {
      throw DomainError.invalidParameter('submissions', ParameterIssue.InvalidFormat, 'submissions must be a list of {tenantId, accountId, credentialId, deviceId, entries}.');
    }
    // Every entry gets a position in the whole request; `origin` maps it back to its submission and index.
    const origin: { submission: number; index: number }[] = [];
    const rejectedOf = submissions.map(() => [] as RejectedReading[]);
    const accounts = new Map<string, { scope: AccountScope; devices: Map<string, IngestDevice>; entries: IngestEntry[] }>();
    const names: EntryNames = {
      field: (entry) => `readings.${origin[entry.index]?.index ?? entry.index}`,
      earlier: () => 'an earlier reading of this device in the same batch',
    };
    const timelyOf = submissions.map((submission, s) => {
      const entries = submission.entries.map((entry) => {
        origin.push({ submission: s, index: entry.index });
        // The device is the credential's, whatever the entry says.
        return { ...entry, index: origin.length - 1, deviceId: submission.deviceId, serialNumber: undefined };
      });
      return this.timely(entries, now, names, rejectedOf[s] ?? []);
    });
    await this.partitions.ensure(timelyOf.flat().map((entry) => entry.recordedAt));

    const revoked = new Set<number>();
    const fates = await this.readings.transaction(async (manager) => {
      const devices = await this.devices.lockForSubmissions(manager, [...new Set(submissions.map((submission) => submission.credentialId))]);
      for (const [s, submission] of submissions.entries()) {
        const device = devices.get(submission.credentialId);
        if (!device || device.retired || device.id !== submission.deviceId || device.tenantId !== submission.tenantId || device.accountId !== submission.accountId) {
          revoked.add(s);
          continue;
        }
        const key = `${submission.accountId}|${submission.tenantId}`;
        let account = accounts.get(key);
        if (!account) {
          account = { scope: { tenantId: submission.tenantId, accountId: submission.accountId }, devices: new Map(), entries: [] };
          accounts.set(key, account);
        }
        account.devices.set(device.id, device);
        account.entries.push(...(timelyOf[s] ?? []));
      }
      const accepted: number[] = [];
      const duplicates: number[] = [];
      const unassigned: number[] = [];
      const rejected: RejectedReading[] = [];
      for (const key of [...accounts.keys()].sort()) {
        const account = accounts.get(key);
        if (!account || account.entries.length === 0) continue;
        const stored = await this.store(manager, account.scope, account.entries, now, names, rejected, [...account.devices.values()]);
        accepted.push(...stored.accepted);
        duplicates.push(...stored.duplicates);
        unassigned.push(...stored.unassigned);
      }
      return { accepted, duplicates, unassigned, rejected };
    });

    const outcomes: DeviceSubmissionOutcome[] = submissions.map(() => ({ kind: 'committed', accepted: 0, duplicates: 0, unassigned: 0, rejected: [] }));
    const count = (indices: number[], field: 'accepted' | 'duplicates' | 'unassigned') => {
      for (const index of indices) {
        const outcome = outcomes[origin[index]?.submission ?? -1];
        if (outcome?.kind === 'committed') outcome[field] += 1;
      }
    };
    count(fates.accepted, 'accepted');
    count(fates.duplicates, 'duplicates');
    count(fates.unassigned, 'unassigned');
    for (const { index, error } of fates.rejected) rejectedOf[origin[index]?.submission ?? -1]?.push({ index: origin[index]?.index ?? index, error });
    for (const [s, outcome] of outcomes.entries()) {
      if (revoked.has(s)) outcomes[s] = { kind: 'revoked' };
      else if (outcome.kind === 'committed') outcome.rejected = (rejectedOf[s] ?? []).sort((a, b) => a.index - b.index);
    }
    await this.credentials.touch([...new Set(submissions.filter((_, s) => !revoked.has(s)).map((submission) => submission.credentialId))]);
    return { outcomes };
  }

  /** The entries within the time window; the others are refused into `rejected`. */
  private timely(entries: IngestEntry[], now: number, names: EntryNames, rejected: RejectedReading[]): IngestEntry[] {
    const cutoff = this.partitions.retentionCutoff(now);
    return entries.filter((entry) => {
      const error = timeError(entry, now, cutoff, names);
      if (error) rejected.push({ index: entry.index, error });
      return !error;
    });
  }

  /**
   * Stores timely entries of one account in `manager`'s transaction: the devices locked (unless the
   * caller locked them: `locked`), the new readings inserted, duplicates and conflicts told apart, the
   * devices' last known fields moved, the publications written to the outbox. Refusals go to `rejected`;
   * returns the indices accepted and duplicate.
   */
  private async store(
    manager: EntityManager,
    scope: AccountScope,
    timely: IngestEntry[],
    now: number,
    names: EntryNames,
    rejected: RejectedReading[],
    locked?: IngestDevice[],
  ): Promise<{ accepted: number[]; duplicates: number[]; unassigned: number[] }> {
    const receivedAt = new Date(now);
    const devices = locked ?? (await this.lock(manager, scope, timely));
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
    const { stored: storedCount, periods } = await this.readings.insert(manager, scope, receivedAt, rows);
    // Every row stored (the usual case), or some keys were stored before: which, from the stored readings' ids.
    const existing = storedCount === rows.length ? undefined : await this.readings.findStored(manager, rows);
    // The keys stored before this batch, each a duplicate (same measurements) or a conflict; the rest are accepted.
    const fates = new Map<string, Fate>();
    const accepted: number[] = [];
    const duplicates: number[] = [];
    for (const [key, { entry, row }] of first) {
      const stored = existing?.get(key);
      if (!stored || stored.id === row.id) {
        accepted.push(entry.index);
        continue;
      }
      const fate: Fate = sameValues(stored.values, row.values) ? 'duplicate' : 'conflict';
      fates.set(key, fate);
      if (fate === 'conflict') rejected.push({ index: entry.index, error: conflicting(entry, 'a stored reading', names) });
      else duplicates.push(entry.index);
    }
    for (const { entry, key } of repeats) {
      const original = first.get(key);
      if (fates.get(key) !== 'conflict' && sameValues(original?.row.values, entry.values)) duplicates.push(entry.index);
      else rejected.push({ index: entry.index, error: conflicting(entry, original ? names.earlier(original.entry) : 'an earlier entry', names) });
    }

    const stored = fates.size === 0 ? rows : rows.filter((row) => !fates.has(readingKey(row.deviceId, row.recordedAt)));
    const groups = groupByShipment(stored, periods);
    // Published once, after the commit, by the outbox relay (docs/readings.md, "Publication"); the
    // devices' last known fields moved with the insert (`ReadingRepository.insert`).
    await writeOutbox(manager, publications(scope, groups, receivedAt, this.config.READINGS_PARTITIONS));
    // Decided from the same periods as the publications, in the same transaction: what the answer says
    // reached no shipment is exactly what no shipment's evaluation gets.
    const unassigned = groups
      .filter((group) => group.shipmentId === null)
      .flatMap((group) => group.rows.map((row) => first.get(readingKey(row.deviceId, row.recordedAt))?.entry.index ?? -1));
    return { accepted, duplicates, unassigned };
  }

  /** The devices that `timely` names, by id or serial number, locked for its readings. */
  private lock(manager: EntityManager, scope: AccountScope, timely: IngestEntry[]): Promise<IngestDevice[]> {
    const deviceIds = new Set<string>();
    const serialNumbers = new Set<string>();
    for (const entry of timely) {
      if (entry.deviceId !== undefined) deviceIds.add(entry.deviceId);
      else if (entry.serialNumber !== undefined) serialNumbers.add(entry.serialNumber);
    }
    return this.devices.lockForReadings(manager, scope, [...deviceIds], [...serialNumbers]);
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

/** How refusals name an entry: its field path (`readings.17`) and, in a conflict message, an earlier entry of its key. */
interface EntryNames {
  field(entry: IngestEntry): string;
  earlier(entry: IngestEntry): string;
}

/** `POST /readings`: entries by their position in the request. */
const API_NAMES: EntryNames = {
  field: (entry) => `readings.${entry.index}`,
  earlier: (entry) => `entry ${entry.index} of the batch`,
};

function timeError(entry: IngestEntry, now: number, cutoff: number, names: EntryNames): RejectedReading['error'] | undefined {
  const field = `${names.field(entry)}.recordedAt`;
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
  const message =
    entry.deviceId !== undefined
      ? `Device ${entry.deviceId} does not exist in this account.`
      : `No device with serial number ${JSON.stringify(entry.serialNumber)} exists in this account.`;
  return { code: ErrorCode.DeviceNotExists, message };
}

function outOfRange(field: string, message: string): RejectedReading['error'] {
  return { code: ErrorCode.InvalidParameter, message, details: { field, issue: ParameterIssue.OutOfRange } };
}

function conflicting(entry: IngestEntry, other: string, names: EntryNames): RejectedReading['error'] {
  const field = `${names.field(entry)}.recordedAt`;
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

/** Accepted readings of one device recorded while it was on one shipment (null: on none). */
interface ShipmentGroup {
  deviceId: string;
  shipmentId: string | null;
  rows: ReadingRow[];
}

/** The rows grouped by device and by the shipment the device was on when it recorded them, from its assignment periods. */
function groupByShipment(rows: ReadingRow[], periods: AssignmentPeriod[]): ShipmentGroup[] {
  const periodsOf = new Map<string, AssignmentPeriod[]>();
  for (const period of periods) {
    const list = periodsOf.get(period.deviceId);
    if (list) list.push(period);
    else periodsOf.set(period.deviceId, [period]);
  }
  const groups = new Map<string, ShipmentGroup>();
  for (const row of rows) {
    const shipmentId = shipmentAt(periodsOf.get(row.deviceId) ?? [], row.recordedAt);
    const key = `${row.deviceId}|${shipmentId ?? ''}`;
    const group = groups.get(key);
    if (group) group.rows.push(row);
    else groups.set(key, { deviceId: row.deviceId, shipmentId, rows: [row] });
  }
  return [...groups.values()];
}

/**
 * The outbox messages of a chunk's stored readings: one per partition of the readings stream that the
 * chunk's shipments fall in (more when one outgrows MAX_PUBLICATION_BYTES), on that partition's subject
 * (`readingsPartitionOf` of the shipment; readings recorded on no shipment go on `none`), its readings in
 * their groups (`groupByShipment`), each group in recordedAt order. Per partition rather than per device:
 * the relay's publish and every consumer's delivery and acknowledgement are per message, and per device
 * they were about half of the DMS's CPU under ingest (docs/readings.md, "Publication").
 */
function publications(scope: AccountScope, groups: ShipmentGroup[], receivedAt: Date, partitionCount: number): OutboxMessage[] {
  const byPartition = new Map<number | 'none', ShipmentGroup[]>();
  for (const group of groups) {
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
