import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { describe, expect, it } from 'vitest';
import { parsePageQuery } from './page-query.js';

function rejection(query: Record<string, unknown>, filters?: string[]): DomainError {
  try {
    parsePageQuery(query, filters);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    return error as DomainError;
  }
  throw new Error(`parsePageQuery accepted ${JSON.stringify(query)}`);
}

function expectIssue(query: Record<string, unknown>, field: string, issue: ParameterIssue, filters?: string[]): void {
  const error = rejection(query, filters);
  expect(error.code).toBe(ErrorCode.InvalidParameter);
  expect(error.details).toEqual({ field, issue });
}

describe('parsePageQuery', () => {
  it('defaults to the first page of 50 without a total', () => {
    expect(parsePageQuery({})).toEqual({ page: { limit: 50, includeTotal: false }, filters: {} });
  });

  it.each([
    ['1', 1],
    ['7', 7],
    ['50', 50],
    ['100', 100],
    ['007', 7],
  ])('accepts limit=%s', (limit, expected) => {
    expect(parsePageQuery({ limit }).page.limit).toBe(expected);
  });

  it.each(['0', '101', '-1', '-0', '1000', '10000000', '99999999999999999999999'])('rejects limit=%s as OutOfRange', (limit) => {
    expectIssue({ limit }, 'limit', ParameterIssue.OutOfRange);
  });

  it.each(['', 'abc', '1e3', '1.5', '1.0', '+5', ' 5', '5 ', '0x10', '5abc', 'Infinity', 'NaN'])(
    'rejects limit=%j as InvalidFormat',
    (limit) => {
      expectIssue({ limit }, 'limit', ParameterIssue.InvalidFormat);
    },
  );

  it('accepts includeTotal=true and false', () => {
    expect(parsePageQuery({ includeTotal: 'true' }).page.includeTotal).toBe(true);
    expect(parsePageQuery({ includeTotal: 'false' }).page.includeTotal).toBe(false);
  });

  it.each(['', 'yes', 'TRUE', 'True', '1', '0', 'no'])('rejects includeTotal=%j as InvalidFormat', (includeTotal) => {
    expectIssue({ includeTotal }, 'includeTotal', ParameterIssue.InvalidFormat);
  });

  it('passes the cursor through untouched; only the service can judge it', () => {
    expect(parsePageQuery({ cursor: 'abc.def', limit: '3', includeTotal: 'true' })).toEqual({
      page: { cursor: 'abc.def', limit: 3, includeTotal: true },
      filters: {},
    });
  });

  it('rejects an empty or overlong cursor as InvalidCursor', () => {
    expectIssue({ cursor: '' }, 'cursor', ParameterIssue.InvalidCursor);
    expectIssue({ cursor: 'x'.repeat(513) }, 'cursor', ParameterIssue.InvalidCursor);
    expect(parsePageQuery({ cursor: 'x'.repeat(512) }).page.cursor).toHaveLength(512);
  });

  it.each(['limit', 'cursor', 'includeTotal', 'status'])('rejects %s given twice as InvalidFormat', (name) => {
    expectIssue({ [name]: ['1', '2'] }, name, ParameterIssue.InvalidFormat, ['status']);
  });

  it('rejects parameters that are not strings', () => {
    expectIssue({ limit: { nested: '1' } }, 'limit', ParameterIssue.InvalidFormat);
  });

  it('rejects an unknown parameter as UnknownField, case-sensitively', () => {
    expectIssue({ foo: '1' }, 'foo', ParameterIssue.UnknownField);
    expectIssue({ Limit: '5' }, 'Limit', ParameterIssue.UnknownField);
    expectIssue({ offset: '10' }, 'offset', ParameterIssue.UnknownField);
  });

  it.each(['a\u0000b', '\u0000', 'a\ud800'])('rejects a filter value %j that PostgreSQL could not take as InvalidFormat', (value) => {
    expectIssue({ status: value }, 'status', ParameterIssue.InvalidFormat, ['status']);
  });

  it('returns the declared filters apart from the page', () => {
    expect(parsePageQuery({ status: 'Planned', limit: '5' }, ['status', 'tag'])).toEqual({
      page: { limit: 5, includeTotal: false },
      filters: { status: 'Planned' },
    });
    expectIssue({ status: 'Planned', reference: 'R' }, 'reference', ParameterIssue.UnknownField, ['status']);
  });
});
