import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { describe, expect, it } from 'vitest';
import { checkBodyHygiene, isStorableText, MAX_BODY_DEPTH } from './body-hygiene.js';

function rejection(body: unknown): DomainError {
  try {
    checkBodyHygiene(body);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    return error as DomainError;
  }
  throw new Error(`checkBodyHygiene accepted ${JSON.stringify(body)}`);
}

function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

describe('checkBodyHygiene', () => {
  it('accepts ordinary bodies, emoji (surrogate pairs) included', () => {
    expect(() => checkBodyHygiene({ name: 'crate 📦', tags: ['a', 'b'], location: { lat: 1, lng: 2 }, metadata: {} })).not.toThrow();
    expect(() => checkBodyHygiene(undefined)).not.toThrow();
  });

  it(`accepts ${MAX_BODY_DEPTH} levels of nesting, the body counting as one, and refuses one more`, () => {
    expect(() => checkBodyHygiene(nested(MAX_BODY_DEPTH))).not.toThrow();
    const error = rejection(nested(MAX_BODY_DEPTH + 1));
    expect(error.code).toBe(ErrorCode.MalformedRequest);
  });

  it('walks a million levels without overflowing the stack', () => {
    expect(rejection(nested(1_000_000)).code).toBe(ErrorCode.MalformedRequest);
  });

  it.each([
    ['__proto__', JSON.parse('{"name":"x","__proto__":{"a":1}}'), '__proto__'],
    ['constructor', { constructor: { prototype: { a: 1 } } }, 'constructor'],
    ['a nested __proto__', JSON.parse('{"location":{"__proto__":{}}}'), 'location.__proto__'],
    ['a __proto__ inside an array entry', JSON.parse('{"assignments":[{"setId":"a"},{"__proto__":{}}]}'), 'assignments.1.__proto__'],
  ])('refuses %s as UnknownField, naming its path', (_name, body, field) => {
    expect(rejection(body).details).toEqual({ field, issue: ParameterIssue.UnknownField });
  });

  it.each([
    ['a NUL in a value', { name: 'a\u0000b' }, 'name'],
    ['an unpaired high surrogate', { name: 'a\ud800' }, 'name'],
    ['an unpaired low surrogate', { name: '\udc00a' }, 'name'],
    ['a NUL in an array entry', { tags: ['ok', '\u0000'] }, 'tags.1'],
    ['a NUL in a key, reported on its object', { metadata: { 'k\u0000': 'v' } }, 'metadata'],
    ['a NUL in a top-level key', { 'k\u0000': 'v' }, 'body'],
    ['a NUL as the whole body', '\u0000', 'body'],
  ])('refuses %s as InvalidFormat', (_name, body, field) => {
    expect(rejection(body).details).toEqual({ field, issue: ParameterIssue.InvalidFormat });
  });

  it('reports the first offending field in document order', () => {
    expect(rejection(JSON.parse('{"a":"\\u0000","__proto__":{}}')).details).toEqual({ field: 'a', issue: ParameterIssue.InvalidFormat });
    expect(rejection(JSON.parse('{"__proto__":{},"a":"\\u0000"}')).details).toEqual({ field: '__proto__', issue: ParameterIssue.UnknownField });
  });
});

describe('isStorableText', () => {
  it.each(['', 'plain', 'é', '📦', '\ud83d\udce6'])('accepts %j', (text) => {
    expect(isStorableText(text)).toBe(true);
  });

  it.each(['\u0000', 'a\u0000', '\ud800', '\udfff', '\udc00\ud800'])('refuses %j', (text) => {
    expect(isStorableText(text)).toBe(false);
  });
});
