import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { expectError } from './http-assertions.js';
import type { HttpResult } from './stack.js';

/*
 * Cases and checks that every resource of the API shares: bodies it refuses, paging, If-Match, 404s.
 * Each check takes the requests to make as functions, so one check serves every collection.
 */

export const STRONG_ETAG = /^"[^"]+"$/;
/** A well-formed UUID that names nothing. */
export const UNKNOWN_ID = '0190a4a0-0000-7000-8000-000000000000';
/** Path ids that are not UUIDs, some of them nearly. */
export const NOT_UUIDS = ['not-a-uuid', '12345', `${UNKNOWN_ID.slice(0, -1)}g`, `${UNKNOWN_ID}0`];
/** `If-Match` values that name no version, so they never match. */
export const UNMATCHABLE_IF_MATCH = ['"999999"', 'W/"1"', 'garbage', '""'];

/** A body case: description, body fields, and the `details.field` and `details.issue` of the 400. */
export type BodyCase = [string, Record<string, unknown>, string, string];

/** Fields no body may carry: an unknown one, and those the API sets itself. */
export const FOREIGN_FIELD_CASES: BodyCase[] = [
  ['an unknown field', { colour: 'red' }, 'colour', 'UnknownField'],
  ['id', { id: randomUUID() }, 'id', 'ReadOnly'],
  ['shipmentId', { shipmentId: randomUUID() }, 'shipmentId', 'ReadOnly'],
  ['setId', { setId: randomUUID() }, 'setId', 'ReadOnly'],
  ['deviceIds', { deviceIds: [] }, 'deviceIds', 'ReadOnly'],
  ['createdAt', { createdAt: '2025-01-01T00:00:00.000Z' }, 'createdAt', 'ReadOnly'],
  ['updatedAt', { updatedAt: '2025-01-01T00:00:00.000Z' }, 'updatedAt', 'ReadOnly'],
];

/** `count` metadata keys whose JSON is exactly `bytes` long when `bytes` is given. */
export function metadataOf(count: number, bytes?: number): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (let i = 0; i < count; i++) metadata[`k${String(i).padStart(2, '0')}`] = '';
  if (bytes !== undefined) {
    metadata.k00 = 'x'.repeat(bytes - Buffer.byteLength(JSON.stringify(metadata)));
    expect(Buffer.byteLength(JSON.stringify(metadata))).toBe(bytes);
  }
  return metadata;
}

/** `metadata` values every body refuses. */
export const BAD_METADATA_CASES: BodyCase[] = [
  ['null metadata', { metadata: null }, 'metadata', 'InvalidFormat'],
  ['array metadata', { metadata: ['a'] }, 'metadata', 'InvalidFormat'],
  ['string metadata', { metadata: 'a=b' }, 'metadata', 'InvalidFormat'],
  ['a nested object in metadata', { metadata: { a: { b: 1 } } }, 'metadata', 'InvalidFormat'],
  ['a null in metadata', { metadata: { a: null } }, 'metadata', 'InvalidFormat'],
  ['metadata with 51 keys', { metadata: metadataOf(51) }, 'metadata', 'OutOfRange'],
  ['metadata of 8 KiB and one byte', { metadata: metadataOf(3, 8193) }, 'metadata', 'OutOfRange'],
];

/**
 * PATCH honours If-Match: with the ETag of creation `changes[0]` applies; that ETag is then stale
 * (412, nothing changed); the new ETag applies `changes[2]`, and `*` applies `changes[3]`.
 */
export async function expectPatchHonoursIfMatch(
  patch: (body: Record<string, unknown>, ifMatch: string) => Promise<HttpResult>,
  read: () => Promise<HttpResult>,
  createdEtag: string,
  changes: [Record<string, unknown>, Record<string, unknown>, Record<string, unknown>, Record<string, unknown>],
): Promise<void> {
  const changed = await patch(changes[0], createdEtag);
  expect(changed.status, changed.text).toBe(200);
  const second = changed.headers.get('etag') ?? '';
  expect(second).toMatch(STRONG_ETAG);
  expect(second).not.toBe(createdEtag);

  expectError(await patch(changes[1], createdEtag), 412, 'PreconditionFailed');
  expect((await read()).body).toEqual(changed.body);

  const current = await patch(changes[2], second);
  expect(current.status, current.text).toBe(200);
  const any = await patch(changes[3], '*');
  expect(any.status, any.text).toBe(200);
  expect(any.body).toMatchObject(changes[3]);
  expect(any.headers.get('etag')).not.toBe(current.headers.get('etag'));
}

/** DELETE honours If-Match: after `change`, the ETag of creation is stale (412, kept); the current one deletes. */
export async function expectDeleteHonoursIfMatch(
  del: (ifMatch: string) => Promise<HttpResult>,
  read: () => Promise<HttpResult>,
  change: () => Promise<unknown>,
  createdEtag: string,
): Promise<void> {
  await change();
  expectError(await del(createdEtag), 412, 'PreconditionFailed');
  expectError(await del('garbage'), 412, 'PreconditionFailed');
  const current = await read();
  expect(current.status).toBe(200);
  expect((await del(current.headers.get('etag') ?? '')).status).toBe(204);
  expect((await read()).status).toBe(404);
}

/** Every request answers 404 with `code`, and none shows `secret`. */
export async function expectNotFound(requests: (() => Promise<HttpResult>)[], code: string, secret?: string): Promise<void> {
  for (const send of requests) {
    const response = await send();
    expectError(response, 404, code);
    if (secret !== undefined) expect(response.text).not.toContain(secret);
  }
}
