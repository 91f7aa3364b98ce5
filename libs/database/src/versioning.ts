import { isDeepStrictEqual } from 'node:util';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';

/** A row whose version the gateway turns into its `ETag`. */
export interface VersionedRow {
  version: number;
  updatedAt: Date;
}

/** PreconditionFailed unless `expectedVersion` (the `If-Match` of the request) is absent or current. */
export function checkVersion(resource: string, row: VersionedRow, expectedVersion: number | undefined): void {
  if (expectedVersion !== undefined && expectedVersion !== row.version) {
    throw new DomainError(
      ErrorCode.PreconditionFailed,
      `The ${resource} has changed since you read it; fetch it again and retry with its current ETag.`,
    );
  }
}

/**
 * Copies `changed` onto `row` and moves its version and `updatedAt` on, when some field really changes.
 * A patch that changes nothing keeps both, so the client's ETag stays valid. Returns whether to save.
 */
export function applyChanges<T extends VersionedRow>(row: T, changed: Partial<T>): boolean {
  const changes = Object.entries(changed).some(([field, value]) => !isDeepStrictEqual(value, row[field as keyof T]));
  if (changes) Object.assign(row, changed, { version: row.version + 1, updatedAt: new Date() });
  return changes;
}
