import { expect } from 'vitest';
import type { HttpResult } from './stack.js';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** RFC 3339 in UTC with milliseconds, as docs/api.md ("Conventions") requires for every timestamp. */
export const TIMESTAMP_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * Asserts the error envelope of the specification: `{"error":{"id","code","message","details"?}}`,
 * with exactly the given details (none when `details` is omitted).
 */
export function expectError(response: HttpResult, status: number, code: string, details?: Record<string, unknown>): void {
  expect({ status: response.status, code: response.body?.error?.code }, response.text).toEqual({ status, code });
  expect(Object.keys(response.body)).toEqual(['error']);
  const error = response.body.error;
  expect(error.id).toMatch(UUID);
  expect(typeof error.message).toBe('string');
  expect(error.message.length).toBeGreaterThan(0);
  if (details === undefined) expect(error).not.toHaveProperty('details');
  else expect(error.details).toEqual(details);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
}

/** `InvalidParameter` naming the offending field and the issue. */
export function expectInvalidParameter(response: HttpResult, field: string, issue: string): void {
  expectError(response, 400, 'InvalidParameter', { field, issue });
}
