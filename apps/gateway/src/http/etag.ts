import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';

/** The strong ETag of a resource version. */
export function etag(version: number): string {
  return `"${version}"`;
}

/**
 * The version an `If-Match` header requires: undefined when absent or `*` (any current version).
 * A header naming no version of ours can never match, so it fails as stale (412).
 */
export function parseIfMatch(header: string | undefined): number | undefined {
  if (header === undefined || header.trim() === '*') return undefined;
  const match = /^\s*"(\d{1,9})"\s*$/.exec(header);
  if (!match) {
    throw new DomainError(ErrorCode.PreconditionFailed, 'If-Match does not match the current ETag of the resource.');
  }
  return Number(match[1]);
}

/** Sets the `ETag` of a single-resource reply and returns the resource as the body. */
export function withETag<T>(reply: { header(name: string, value: string): unknown }, versioned: { resource: T; version: number }): T {
  reply.header('ETag', etag(versioned.version));
  return versioned.resource;
}
