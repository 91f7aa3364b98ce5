import { createHmac, timingSafeEqual } from 'node:crypto';
import { ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';

const MAC_BYTES = 16;

/**
 * Positions are PostgreSQL `bigint` sequence values: a decimal integer from 0 to 2^63-1 without leading
 * zeros. A larger one, even correctly signed (a leaked or default secret), would overflow the query's
 * `bigint` parameter and fail as a 500 instead of this 400.
 */
const POSITION = /^(?:0|[1-9]\d{0,18})$/;
const MAX_POSITION = 2n ** 63n - 1n;

function isPosition(position: string): boolean {
  return POSITION.test(position) && BigInt(position) <= MAX_POSITION;
}

/**
 * Opaque, tamper-evident page cursors. A cursor carries the last position of a page and a MAC over
 * that position and the *binding* (collection, scope and filters), so a cursor is only accepted by
 * the exact query it came from.
 */
export class CursorCodec {
  constructor(private readonly secret: string) {}

  encode(binding: string, position: string): string {
    return `${Buffer.from(position).toString('base64url')}.${this.mac(binding, position).toString('base64url')}`;
  }

  /** Returns the position of a cursor made by `encode` for the same binding; else 400 InvalidCursor. */
  decode(binding: string, cursor: string): string {
    const [encodedPosition, encodedMac, extra] = cursor.split('.');
    if (!encodedPosition || !encodedMac || extra !== undefined) throw invalidCursor();
    const position = Buffer.from(encodedPosition, 'base64url').toString();
    const given = Buffer.from(encodedMac, 'base64url');
    // Node's base64 decoder skips characters outside the alphabet and ignores trailing bits, so
    // different strings decode alike; only the canonical spelling of a cursor is that cursor.
    if (Buffer.from(position).toString('base64url') !== encodedPosition || given.toString('base64url') !== encodedMac) {
      throw invalidCursor();
    }
    const expected = this.mac(binding, position);
    if (given.length !== expected.length || !timingSafeEqual(given, expected) || !isPosition(position)) {
      throw invalidCursor();
    }
    return position;
  }

  private mac(binding: string, position: string): Buffer {
    return createHmac('sha256', this.secret).update(binding).update('\n').update(position).digest().subarray(0, MAC_BYTES);
  }
}

/** A stable string for a collection, its scope and its filters (key order does not matter). */
export function cursorBinding(collection: string, scope: Record<string, string | number | boolean | null | undefined>): string {
  const keys = Object.keys(scope).filter((key) => scope[key] !== undefined).sort();
  return JSON.stringify([collection, ...keys.map((key) => [key, scope[key]])]);
}

function invalidCursor(): DomainError {
  return DomainError.invalidParameter(
    'cursor',
    ParameterIssue.InvalidCursor,
    'The cursor is not valid for this collection and filters; start again without a cursor.',
  );
}
