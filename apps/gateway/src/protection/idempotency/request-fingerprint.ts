import { createHash } from 'node:crypto';
import { ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
/**
 * Visible ASCII only (0x21-0x7E): no spaces, which proxies may fold or trim, and nothing a client could
 * spell in two encodings.
 */
const KEY_CHARACTERS = /^[\x21-\x7e]*$/;

/** The request's Idempotency-Key, undefined without one; 400 when it is not 1..255 visible ASCII characters. */
export function readIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (Array.isArray(header)) {
    throw DomainError.invalidParameter(IDEMPOTENCY_KEY_HEADER, ParameterIssue.InvalidFormat, 'Send one Idempotency-Key header.');
  }
  if (header.length < 1 || header.length > 255) {
    throw DomainError.invalidParameter(IDEMPOTENCY_KEY_HEADER, ParameterIssue.OutOfRange, 'The Idempotency-Key must be 1 to 255 characters long.');
  }
  if (!KEY_CHARACTERS.test(header)) {
    throw DomainError.invalidParameter(IDEMPOTENCY_KEY_HEADER, ParameterIssue.InvalidFormat, 'The Idempotency-Key may only hold visible ASCII characters.');
  }
  return header;
}

/**
 * What makes two requests "the same" for an idempotency key: method, path with query, and the body
 * as canonical JSON (object keys sorted), so that a retry whose serializer orders keys differently
 * still matches. Hashed, so the stored record stays small.
 */
export function requestFingerprint(method: string, url: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method}\n${url}\n${body === undefined ? '' : canonicalJson(body)}`)
    .digest('hex');
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
