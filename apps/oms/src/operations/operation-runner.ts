import { setTimeout as delay } from 'node:timers/promises';
import { Inject, Injectable } from '@nestjs/common';
import {
  CLOSED_SHIPMENT_STATUSES,
  type EntryError,
  ErrorCode,
  EventType,
  type LinkEntry,
  OperationStatus,
  OperationType,
} from '@tracking/contracts';
import { DomainError, type Logger } from '@tracking/core';
import { isDatabaseUnavailable } from '@tracking/database';
import { recordEvents } from '@tracking/outbox';
import type { EntityManager } from 'typeorm';
import type { OmsConfig } from '../config.js';
import { DmsClient } from '../dms/dms.client.js';
import { shipmentClosed } from '../sets/shipment-contents.service.js';
import { ShipmentRepository } from '../shipments/shipment.repository.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';
import type { OperationEntity } from './operation.entity.js';
import { type EntryResult, OperationRepository, type PendingEntry } from './operation.repository.js';
import { toOperation } from './operations.service.js';

/** Errors after which the same chunk is tried again: the DMS or the database was away for a while. */
const TRANSIENT_CODES: ReadonlySet<string> = new Set([ErrorCode.ServiceUnavailable, ErrorCode.GatewayTimeout, ErrorCode.BadGateway]);
const MAX_BACKOFF_MS = 5000;

/**
 * Runs one operation, a chunk of entries per transaction. Each transaction locks the operation's row,
 * decides the chunk (the DMS decides the device side and records each outcome with its effect), records
 * the outcomes and moves the counts on; so a worker killed at any point leaves either a whole chunk or
 * none of it, and whoever runs the operation next continues at the first unprocessed entry. A chunk the
 * DMS applied but the OMS never recorded is answered again from the DMS's record, not applied twice.
 *
 * A cancel waits for the chunk in progress (the row lock); the next transaction sees it, closes the
 * operation on the DMS side and records what the DMS had applied of a chunk that never came back.
 */
@Injectable()
export class OperationRunner {
  private readonly chunkSize: number;
  private readonly outageLimitMs: number;

  constructor(
    private readonly operations: OperationRepository,
    private readonly shipments: ShipmentRepository,
    private readonly dms: DmsClient,
    @Inject(OMS_CONFIG) config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {
    this.chunkSize = config.WORKER_CHUNK_SIZE;
    this.outageLimitMs = config.WORKER_OUTAGE_LIMIT_MS;
  }

  /**
   * Runs the operation until it is finished or cancelled and closed; safe to call again at any time.
   * Unavailable services and databases are waited out with backoff, in this attempt, for up to
   * WORKER_OUTAGE_LIMIT_MS at a stretch; other errors, and longer outages, end the attempt (the queue
   * retries). When `stop` is aborted (the worker shuts down) it returns false after the chunk in progress.
   */
  async run(operationId: string, stop?: AbortSignal): Promise<boolean> {
    for (let failures = 0, outageSince = 0; ; ) {
      if (stop?.aborted) return false;
      let done: boolean;
      try {
        done = await this.step(operationId);
        failures = 0;
      } catch (error) {
        if (!isTransient(error)) throw error;
        if (failures === 0) outageSince = Date.now();
        if (Date.now() - outageSince > this.outageLimitMs) throw error;
        failures += 1;
        const wait = Math.min(MAX_BACKOFF_MS, 100 * 2 ** failures);
        this.logger.warn({ err: error, operationId, failures, retryInMs: wait }, 'operation chunk failed; retrying');
        await delay(wait, undefined, { signal: stop }).catch(() => undefined);
        continue;
      }
      if (done) return true;
    }
  }

  /** Marks an operation the queue gave up on as Failed, with the entries it processed. */
  async abandon(operationId: string): Promise<void> {
    await this.operations.withLocked(operationId, async (operation, manager) => {
      if (!operation || operation.settled) return;
      if (operation.status === OperationStatus.Pending || operation.status === OperationStatus.Running) {
        operation.status = OperationStatus.Failed;
        operation.completedAt = new Date();
      }
      operation.settled = true;
      await this.operations.save(manager, operation);
      await recordFinished(manager, operation);
    });
  }

  /** One transaction: the next chunk, or closing the operation; true when nothing is left. */
  private step(operationId: string): Promise<boolean> {
    return this.operations.withLocked(operationId, async (operation, manager) => {
      if (!operation || operation.settled) return true;
      if (operation.status === OperationStatus.Cancelled) {
        await this.settleCancelled(manager, operation);
        return true;
      }
      if (operation.status === OperationStatus.Pending) {
        // Committed on its own, so that clients see Running while the first chunk is decided.
        operation.status = OperationStatus.Running;
        operation.startedAt = new Date();
        await this.operations.save(manager, operation);
        return false;
      }
      const entries = await this.operations.entriesFrom(manager, operation.id, operation.processed, this.chunkSize);
      if (entries.length > 0) {
        const results =
          operation.type === OperationType.BulkSetAssignment
            ? await this.assign(manager, operation, entries)
            : await this.retire(operation, entries);
        await this.operations.recordResults(manager, operation, results);
      }
      const done = entries.length === 0 || operation.processed >= operation.total;
      if (done) finish(operation);
      await this.operations.save(manager, operation);
      if (done) await recordFinished(manager, operation);
      return done;
    });
  }

  /**
   * Assignment entries: the OMS judges the set (SetNotExists, ShipmentClosed, in that order, as a single
   * assignment does) with the shipments locked for share and the sets for key share, then the DMS judges
   * the devices and links them.
   */
  private async assign(manager: EntityManager, operation: OperationEntity, entries: PendingEntry[]): Promise<EntryResult[]> {
    const sets = await this.shipments.lockSetsForAssignment(manager, operation, entries.map((entry) => entry.setId ?? ''));
    const refusals = new Map<number, EntryError>();
    const chunk: LinkEntry[] = entries.map((entry) => {
      const set = entry.setId === null ? undefined : sets.get(entry.setId);
      if (!set) {
        refusals.set(entry.index, { code: ErrorCode.SetNotExists, message: `Set ${entry.setId} does not exist in this account.` });
        return { index: entry.index, deviceId: entry.deviceId, target: null };
      }
      if (CLOSED_SHIPMENT_STATUSES.includes(set.shipmentStatus)) {
        refusals.set(entry.index, asEntryError(shipmentClosed(set.shipmentStatus)));
        return { index: entry.index, deviceId: entry.deviceId, target: null };
      }
      return { index: entry.index, deviceId: entry.deviceId, target: { shipmentId: set.shipmentId, setId: set.id } };
    });
    const { outcomes } = await this.dms.linkChunk({ ...scopeOf(operation), operationId: operation.id, entries: chunk });
    // An outcome the DMS recorded wins over our refusal: it was applied by an attempt we never heard back from.
    const decided = new Map(outcomes.map((outcome) => [outcome.index, outcome.error]));
    return entries.map((entry) => {
      const error = decided.has(entry.index) ? (decided.get(entry.index) ?? null) : refusals.get(entry.index);
      if (error === undefined) throw new Error(`the DMS left entry ${entry.index} of operation ${operation.id} undecided`);
      return { index: entry.index, error };
    });
  }

  /** Retirement entries: the DMS judges and retires each device. */
  private async retire(operation: OperationEntity, entries: PendingEntry[]): Promise<EntryResult[]> {
    const { outcomes } = await this.dms.retireChunk({
      ...scopeOf(operation),
      operationId: operation.id,
      entries: entries.map((entry) => ({ index: entry.index, deviceId: entry.deviceId })),
    });
    if (outcomes.length !== entries.length) throw new Error(`the DMS left entries of operation ${operation.id} undecided`);
    return outcomes;
  }

  /** A cancelled operation: the DMS refuses further chunks of it, and what it applied is recorded. */
  private async settleCancelled(manager: EntityManager, operation: OperationEntity): Promise<void> {
    const { outcomes } = await this.dms.settle({ ...scopeOf(operation), operationId: operation.id, fromIndex: operation.processed });
    const processed = operation.processed;
    await this.operations.recordResults(manager, operation, outcomes);
    operation.settled = true;
    // A new version only when the counts moved: a client's ETag of the cancelled operation stays valid.
    if (operation.processed !== processed) await this.operations.save(manager, operation);
    else await this.operations.markSettled(manager, operation.id);
    await recordFinished(manager, operation);
  }
}

/**
 * Records `operation.finished` in the transaction that settles the operation (sets `settled`), which
 * happens once per operation under its row lock: when the last chunk finishes it, when the queue gives up
 * on it, or, for a cancelled one, when a worker has closed it in the DMS and recorded its final counts
 * (docs/events.md). `data` is the operation as GET then shows it.
 */
function recordFinished(manager: EntityManager, operation: OperationEntity): Promise<unknown> {
  return recordEvents(manager, [
    { tenantId: operation.tenantId, accountId: operation.accountId, type: EventType.OperationFinished, data: toOperation(operation) },
  ]);
}

/** The final status from the counts: every entry succeeded, none did, or some did. */
function finish(operation: OperationEntity): void {
  operation.status =
    operation.failed === 0
      ? OperationStatus.Succeeded
      : operation.succeeded === 0
        ? OperationStatus.Failed
        : OperationStatus.PartiallySucceeded;
  operation.completedAt = new Date();
  operation.settled = true;
}

function scopeOf(operation: OperationEntity): { tenantId: string; accountId: string } {
  return { tenantId: operation.tenantId, accountId: operation.accountId };
}

function asEntryError(error: DomainError): EntryError {
  return { code: error.code, message: error.message };
}

/** Unavailable services (the DMS answers 503 when its own database is away), and the OMS database out of reach, are waited out. */
function isTransient(error: unknown): boolean {
  if (error instanceof DomainError) return TRANSIENT_CODES.has(error.code);
  return isDatabaseUnavailable(error);
}
