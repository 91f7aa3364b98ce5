import { ErrorCode, MAX_BULK_ENTRIES, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { validate as isUuid } from 'uuid';

/**
 * Validation of bulk request bodies as a whole: shape, size and repeated devices. Field names follow the
 * other bodies' (`assignments.3.deviceId`). Ids are returned in lower case, as the services store them.
 * Written by hand rather than as class-validator DTOs, which would build and check up to ten thousand
 * nested objects on the event loop (speed machinery, docs/architecture.md; not measured).
 */

/** `{"assignments":[{"setId","deviceId"}, ...]}` as `[setId, deviceId]` pairs. */
export function parseBulkAssignBody(body: unknown): [string, string][] {
  const entries = requireList(body, 'assignments');
  const seen = new Map<string, number>();
  return entries.map((entry, index) => {
    const field = `assignments.${index}`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw invalid(field, ParameterIssue.InvalidFormat, `${field} must be an object with setId and deviceId.`);
    }
    rejectUnknownFields(entry, ['setId', 'deviceId'], field);
    const { setId, deviceId } = entry as Record<string, unknown>;
    const pair: [string, string] = [requireUuid(setId, `${field}.setId`), requireUuid(deviceId, `${field}.deviceId`)];
    checkUnique(seen, pair[1], index, `${field}.deviceId`, 'assignments');
    return pair;
  });
}

/** `{"deviceIds":[...]}`. */
export function parseBulkRetireBody(body: unknown): string[] {
  const entries = requireList(body, 'deviceIds');
  const seen = new Map<string, number>();
  return entries.map((entry, index) => {
    const id = requireUuid(entry, `deviceIds.${index}`);
    checkUnique(seen, id, index, `deviceIds.${index}`, 'deviceIds');
    return id;
  });
}

function requireList(body: unknown, name: string): unknown[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DomainError(ErrorCode.MalformedRequest, 'The request body must be a JSON object.');
  }
  rejectUnknownFields(body, [name]);
  const list = (body as Record<string, unknown>)[name];
  if (list === undefined) throw invalid(name, ParameterIssue.Required, `${name} is required.`);
  if (!Array.isArray(list)) throw invalid(name, ParameterIssue.InvalidFormat, `${name} must be an array.`);
  if (list.length < 1 || list.length > MAX_BULK_ENTRIES) {
    throw invalid(name, ParameterIssue.OutOfRange, `${name} must have 1 to ${MAX_BULK_ENTRIES} entries.`);
  }
  return list;
}

function rejectUnknownFields(object: object, known: string[], parent?: string): void {
  for (const key of Object.keys(object)) {
    if (known.includes(key)) continue;
    const field = parent === undefined ? key : `${parent}.${key}`;
    throw invalid(field, ParameterIssue.UnknownField, `${field} is not a field of this request.`);
  }
}

function requireUuid(value: unknown, field: string): string {
  if (value === undefined) throw invalid(field, ParameterIssue.Required, `${field} is required.`);
  if (typeof value !== 'string' || !isUuid(value)) throw invalid(field, ParameterIssue.InvalidFormat, `${field} must be a UUID.`);
  return value.toLowerCase();
}

/** A device may appear once per request: two entries for one device would race each other. */
function checkUnique(seen: Map<string, number>, deviceId: string, index: number, field: string, list: string): void {
  const first = seen.get(deviceId);
  if (first !== undefined) {
    throw invalid(field, ParameterIssue.Duplicate, `${field} repeats the device of ${list}.${first}; name each device once per request.`);
  }
  seen.set(deviceId, index);
}

function invalid(field: string, issue: ParameterIssue, message: string): DomainError {
  return DomainError.invalidParameter(field, issue, message);
}
