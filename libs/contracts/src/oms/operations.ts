import type { ErrorCode } from '../errors.js';
import type { AccountScope, PageMetadata, PageRequest } from '../paging.js';

/** What a bulk request does to each of its entries (docs/api.md, "Bulk operations"). */
export enum OperationType {
  BulkSetAssignment = 'BulkSetAssignment',
  BulkRetire = 'BulkRetire',
}

/**
 * `Pending` until a worker starts it, `Running` while entries are processed; then one of the four
 * final statuses: every entry succeeded, some did, none did, or a client cancelled it first.
 */
export enum OperationStatus {
  Pending = 'Pending',
  Running = 'Running',
  Succeeded = 'Succeeded',
  PartiallySucceeded = 'PartiallySucceeded',
  Failed = 'Failed',
  Cancelled = 'Cancelled',
}

export const UNFINISHED_OPERATION_STATUSES: readonly OperationStatus[] = [OperationStatus.Pending, OperationStatus.Running];

/**
 * `details.policy` of the 429 `RateLimitExceeded` a bulk request gets when its account is over a quota:
 * too many unfinished operations, or too many entries waiting in them.
 */
export enum OperationQuota {
  UnfinishedOperations = 'unfinished-operations',
  PendingEntries = 'pending-entries',
}

export enum OperationResultStatus {
  Succeeded = 'Succeeded',
  Failed = 'Failed',
}

/** The most entries one bulk request may carry. */
export const MAX_BULK_ENTRIES = 10000;

/** Counts that always agree with the operation's results: `processed = succeeded + failed`. */
export interface OperationProgress {
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
}

export interface Operation {
  id: string;
  type: OperationType;
  status: OperationStatus;
  /** The operation's own address, as in the `Location` header of the 202. */
  url: string;
  progress: OperationProgress;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
}

/** The error of one entry, exactly as the single-entity endpoint would have answered it. */
export interface EntryError {
  code: ErrorCode;
  message: string;
}

/**
 * The outcome of one processed entry: its position in the request, the entry's own fields
 * (`setId` and `deviceId` of an assignment, `deviceId` of a retirement), and how it ended.
 */
export interface OperationResult {
  index: number;
  setId?: string;
  deviceId: string;
  status: OperationResultStatus;
  error: EntryError | null;
}

export interface OperationPage {
  items: Operation[];
  metadata: PageMetadata;
}

export interface OperationResultPage {
  items: OperationResult[];
  metadata: PageMetadata;
}

/**
 * A bulk request the gateway has validated as a whole. Entries travel as tuples to keep a 10000-entry
 * request well under NATS's default 1 MiB message size.
 */
export type CreateOperationRequest = AccountScope &
  (
    | { type: OperationType.BulkSetAssignment; /** `[setId, deviceId]` pairs. */ assignments: [string, string][] }
    | { type: OperationType.BulkRetire; deviceIds: string[] }
  );

export interface OperationFilters {
  /** Any of these types. */
  type?: OperationType[];
  /** Any of these statuses. */
  status?: OperationStatus[];
}

export interface ListOperationsRequest extends AccountScope {
  page: PageRequest;
  filters: OperationFilters;
}

export interface OperationRequest extends AccountScope {
  operationId: string;
}

export interface ListOperationResultsRequest extends OperationRequest {
  page: PageRequest;
  filters: { status?: OperationResultStatus };
}
