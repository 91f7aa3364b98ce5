import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { echo } from './echo.js';

/**
 * Levels of objects and arrays, the body itself counting as one: far more than any request of the API
 * needs (a bulk entry is level 3), far fewer than would strain a recursive validator.
 */
export const MAX_BODY_DEPTH = 32;

/**
 * Keys through which copying a parsed body into a class instance or merging it (`target[key] = value`)
 * reaches a prototype: `__proto__` directly, `constructor` through `constructor.prototype`. JSON.parse
 * alone keeps them as plain data.
 */
const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor']);

/**
 * A UTF-16 surrogate without its pair: UTF-8 cannot encode one, so it would be stored as U+FFFD and
 * not given back as sent. (A NUL character PostgreSQL cannot store at all, in text or jsonb.)
 */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether `text` can be stored and given back unchanged. */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && !UNPAIRED_SURROGATE.test(text);
}

/**
 * Refuses, before any copying or validation, what JSON allows but the API cannot take: nesting beyond
 * `MAX_BODY_DEPTH` (400 MalformedRequest; validators and class-transformer recurse), the keys
 * `__proto__` and `constructor` anywhere (400 UnknownField), and text with NUL characters or unpaired
 * surrogates, in keys or values (400 InvalidFormat). Fields are named as validation names them
 * (`location.lat`, `tags.3`), under `basePath` when the value checked is part of a body judged piece by
 * piece (an entry of `POST /readings`: `readings.3`). Iterative, so a hostile body cannot overflow the stack.
 */
export function checkBodyHygiene(body: unknown, basePath = ''): void {
  const pending: Pending[] = [{ value: body, path: basePath, depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, path, key, depth } = next;
    if (key !== undefined) checkKey(key.name, path, key.parentPath);
    if (typeof value === 'string') {
      if (!isStorableText(value)) throw unstorable(path);
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    // `depth` counts from 0 at the body, so this object or array is at level depth + 1.
    if (depth >= MAX_BODY_DEPTH) {
      throw new DomainError(ErrorCode.MalformedRequest, `The request body nests JSON deeper than ${MAX_BODY_DEPTH} levels.`);
    }
    // Pushed in reverse, so that fields are checked in document order and the first offender is reported.
    for (const [name, child] of Object.entries(value).reverse()) {
      // Names are the client's own keys: a path repeats each cut (`echo`).
      const childPath = path ? `${path}.${echo(name)}` : echo(name);
      const childKey = Array.isArray(value) ? undefined : { name, parentPath: path };
      pending.push({ value: child, path: childPath, key: childKey, depth: depth + 1 });
    }
  }
}

interface Pending {
  value: unknown;
  path: string;
  /** Set for the members of an object, whose names are checked too. */
  key?: { name: string; parentPath: string };
  depth: number;
}

function checkKey(name: string, path: string, parentPath: string): void {
  if (FORBIDDEN_KEYS.has(name)) {
    throw DomainError.invalidParameter(path, ParameterIssue.UnknownField, `${path} is not a field of this request.`);
  }
  // A bad key is reported on the object holding it: the key itself may not even print.
  if (!isStorableText(name)) throw unstorable(parentPath);
}

function unstorable(path: string): DomainError {
  const field = path || 'body';
  return DomainError.invalidParameter(
    field,
    ParameterIssue.InvalidFormat,
    `${field} contains a NUL character or an unpaired UTF-16 surrogate, which cannot be stored.`,
  );
}
