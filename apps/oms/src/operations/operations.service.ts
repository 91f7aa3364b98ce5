import { Inject, Injectable } from '@nestjs/common';
import {
  type AccountScope,
  type CreateOperationRequest,
  ErrorCode,
  type ListOperationResultsRequest,
  type ListOperationsRequest,
  type Operation,
  type OperationPage,
  type OperationRequest,
  type OperationResult,
  type OperationResultPage,
  OperationResultStatus,
  OperationStatus,
  OperationQuota,
  OperationType,
  type Versioned,
} from '@tracking/contracts';
import { DomainError, type Logger, toDateTime } from '@tracking/core';
import { validate as isUuid, v7 as uuidv7 } from 'uuid';
import type { OperationEntity, OperationEntryEntity } from './operation.entity.js';
import { OperationQueue } from './operation-queue.js';
import { OperationRepository, type UnfinishedLoad } from './operation.repository.js';
import type { OmsConfig } from '../config.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';

/**
 * Bulk operations as the API sees them: recording one (the HTTP request does nothing heavier), reading
 * it and its results, cancelling it. Workers do the work (operation-runner.ts).
 */
@Injectable()
export class OperationsService {
  constructor(
    private readonly operations: OperationRepository,
    private readonly queue: OperationQueue,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  async create(request: CreateOperationRequest, requestId?: string): Promise<Versioned<Operation>> {
    const entries: [string | null, string][] =
      request.type === OperationType.BulkSetAssignment ? request.assignments : request.deviceIds.map((id) => [null, id]);
    const now = new Date();
    const operation: Omit<OperationEntity, 'seq'> = {
      id: uuidv7(),
      tenantId: request.tenantId,
      accountId: request.accountId,
      type: request.type,
      status: OperationStatus.Pending,
      total: entries.length,
      processed: 0,
      succeeded: 0,
      failed: 0,
      settled: false,
      requestId: requestId ?? null,
      version: 1,
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      completedAt: null,
    };
    await this.operations.insert(operation, entries, (unfinished) => this.admit(unfinished, entries.length));
    try {
      await this.queue.enqueue([operation.id], requestId);
    } catch (error) {
      // Recorded is enough: the workers' reconciliation finds it in PostgreSQL and enqueues it.
      this.logger.warn({ err: error, operationId: operation.id }, 'could not enqueue the operation; reconciliation will');
    }
    return { resource: toOperation(operation), version: operation.version };
  }

  /**
   * The account's quotas: at most OPERATIONS_MAX_UNFINISHED operations Pending or Running, and at most
   * OPERATIONS_MAX_PENDING_ENTRIES entries waiting in them, this request's included. Over either, the
   * request is refused with 429 (the gateway adds Retry-After): it is a limit on the rate at which an
   * account may hand work in, and it clears on its own as the workers finish.
   */
  private admit(unfinished: UnfinishedLoad, entries: number): void {
    const maxOperations = this.config.OPERATIONS_MAX_UNFINISHED;
    if (unfinished.operations + 1 > maxOperations) {
      throw new DomainError(
        ErrorCode.RateLimitExceeded,
        `The account has ${unfinished.operations} unfinished operations, the most it may have; retry once one has finished.`,
        { policy: OperationQuota.UnfinishedOperations, limit: maxOperations, current: unfinished.operations },
      );
    }
    const maxEntries = this.config.OPERATIONS_MAX_PENDING_ENTRIES;
    if (unfinished.entries + entries > maxEntries) {
      throw new DomainError(
        ErrorCode.RateLimitExceeded,
        `The account's unfinished operations have ${unfinished.entries} entries left to process; ${entries} more would exceed ` +
          `the limit of ${maxEntries}. Retry once more of them are processed.`,
        { policy: OperationQuota.PendingEntries, limit: maxEntries, current: unfinished.entries, requested: entries },
      );
    }
  }

  async list(request: ListOperationsRequest): Promise<OperationPage> {
    const { rows, metadata } = await this.operations.findPage(request, request.page, request.filters);
    return { items: rows.map(toOperation), metadata };
  }

  async get(request: OperationRequest): Promise<Versioned<Operation>> {
    const operation = await this.require(request);
    return { resource: toOperation(operation), version: operation.version };
  }

  async results(request: ListOperationResultsRequest): Promise<OperationResultPage> {
    const operation = await this.require(request);
    const { rows, metadata } = await this.operations.findResults(operation.id, request.page, request.filters.status);
    return { items: rows.map((row) => toResult(operation, row)), metadata };
  }

  /** Cancels a Pending or Running operation; its unprocessed entries are skipped. */
  async cancel(request: OperationRequest): Promise<null> {
    if (isUuid(request.operationId) && (await this.operations.cancel(request, request.operationId))) return null;
    await this.require(request);
    throw new DomainError(ErrorCode.OperationFinished, 'The operation has finished; there is nothing left to cancel.');
  }

  private async require(request: OperationRequest): Promise<OperationEntity> {
    const operation = isUuid(request.operationId) ? await this.operations.findOne(request, request.operationId) : null;
    if (!operation) {
      throw new DomainError(ErrorCode.OperationNotExists, `Operation ${request.operationId} does not exist in this account.`);
    }
    return operation;
  }
}

export function operationUrl(scope: AccountScope, id: string): string {
  return `/v1/accounts/${scope.accountId}/operations/${id}`;
}

export function toOperation(entity: Omit<OperationEntity, 'seq'>): Operation {
  return {
    id: entity.id,
    type: entity.type,
    status: entity.status,
    url: operationUrl(entity, entity.id),
    progress: { total: entity.total, processed: entity.processed, succeeded: entity.succeeded, failed: entity.failed },
    createdAt: entity.createdAt.toISOString(),
    startedAt: toDateTime(entity.startedAt),
    completedAt: toDateTime(entity.completedAt),
  };
}

function toResult(operation: OperationEntity, row: OperationEntryEntity): OperationResult {
  const failed = row.status === OperationResultStatus.Failed;
  return {
    index: row.index,
    ...(operation.type === OperationType.BulkSetAssignment ? { setId: row.setId ?? '' } : {}),
    deviceId: row.deviceId,
    status: failed ? OperationResultStatus.Failed : OperationResultStatus.Succeeded,
    error: failed ? { code: row.errorCode as ErrorCode, message: row.errorMessage ?? '' } : null,
  };
}
