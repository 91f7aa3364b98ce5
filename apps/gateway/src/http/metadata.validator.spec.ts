import 'reflect-metadata';
import { validate } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { IsMetadata, METADATA_MAX_BYTES, METADATA_MAX_KEYS } from './metadata.validator.js';
import { toInvalidParameter } from './validation.js';

class Holder {
  @IsMetadata() metadata: unknown;
}

async function issueOf(metadata: unknown): Promise<string | undefined> {
  const holder = Object.assign(new Holder(), { metadata });
  const errors = await validate(holder);
  return errors.length === 0 ? undefined : (toInvalidParameter(errors).details?.issue as string);
}

const keys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i]));

describe('IsMetadata', () => {
  it.each([
    ['an empty object', {}],
    ['strings, numbers and booleans', { a: 'x', b: -1.5, c: 0, d: true, e: false, f: '' }],
    [`${METADATA_MAX_KEYS} keys`, keys(METADATA_MAX_KEYS)],
    ['an object without prototype', Object.assign(Object.create(null) as object, { a: 1 })],
    [`exactly ${METADATA_MAX_BYTES} bytes`, { a: 'x'.repeat(METADATA_MAX_BYTES - 8) }],
  ])('accepts %s', async (_case, metadata) => {
    expect(await issueOf(metadata)).toBeUndefined();
  });

  it.each([
    ['null', null],
    ['an array', [1, 2]],
    ['a string', '{}'],
    ['a number', 3],
    ['a Date', new Date()],
    ['a nested object', { a: { b: 1 } }],
    ['a nested array', { a: [] }],
    ['a null value', { a: null }],
    ['NaN', { a: Number.NaN }],
    ['Infinity', { a: Number.POSITIVE_INFINITY }],
    ['-Infinity', { a: Number.NEGATIVE_INFINITY }],
    ['a bigint', { a: 1n }],
    ['too many keys and a bad value (the type is reported first)', { ...keys(METADATA_MAX_KEYS + 1), bad: {} }],
  ])('reports %s as InvalidFormat', async (_case, metadata) => {
    expect(await issueOf(metadata)).toBe('InvalidFormat');
  });

  it('reports a missing value as Required', async () => {
    expect(await issueOf(undefined)).toBe('Required');
  });

  it.each([
    [`${METADATA_MAX_KEYS + 1} keys`, keys(METADATA_MAX_KEYS + 1)],
    [`${METADATA_MAX_BYTES + 1} bytes`, { a: 'x'.repeat(METADATA_MAX_BYTES - 7) }],
    ['more bytes than characters allow', { a: '€'.repeat(METADATA_MAX_BYTES / 3) }],
  ])('reports %s as OutOfRange', async (_case, metadata) => {
    expect(await issueOf(metadata)).toBe('OutOfRange');
  });
});
