import 'reflect-metadata';
import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { describe, expect, it } from 'vitest';
import { createValidationPipe } from '../http/validation.js';
import { ListShipmentsQuery } from '../shipments/dto/shipment-query.js';
import { PageQuery } from './page-query.js';
import { IsFilterLength } from './query-rules.js';

/** A collection with one filter that takes any text. */
class StatusQuery extends PageQuery {
  @IsFilterLength('status', 0, 1000)
  status?: string;
}

/** A collection with two such filters. */
class StatusTagQuery extends StatusQuery {
  @IsFilterLength('tag', 0, 1000)
  tag?: string;
}

const pipe = createValidationPipe();
const FILTERS = { status: StatusQuery, 'status,tag': StatusTagQuery } as const;

/** The query as a controller's `@Query() query: PageQuery` (or a subclass with `filters`) receives it. */
async function parsePageQuery(
  query: Record<string, unknown>,
  filters: string[] = [],
): Promise<{ page: ReturnType<PageQuery['pageRequest']>; filters: Record<string, string> }> {
  const metatype = filters.length === 0 ? PageQuery : FILTERS[filters.join(',') as keyof typeof FILTERS];
  const parsed = (await pipe.transform(query, { type: 'query', metatype })) as PageQuery & Record<string, string | undefined>;
  const rest = Object.fromEntries(filters.filter((name) => parsed[name] !== undefined).map((name) => [name, parsed[name]!]));
  return { page: parsed.pageRequest(), filters: rest };
}

async function rejection(query: Record<string, unknown>, filters?: string[], metatype?: typeof PageQuery): Promise<DomainError> {
  try {
    if (metatype) await pipe.transform(query, { type: 'query', metatype });
    else await parsePageQuery(query, filters);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    return error as DomainError;
  }
  throw new Error(`the query pipe accepted ${JSON.stringify(query)}`);
}

async function expectIssue(query: Record<string, unknown>, field: string, issue: ParameterIssue, filters?: string[]): Promise<void> {
  const error = await rejection(query, filters);
  expect(error.code).toBe(ErrorCode.InvalidParameter);
  expect(error.details).toEqual({ field, issue });
}

describe('PageQuery through the validation pipe', async () => {
  it('defaults to the first page of 50 without a total', async () => {
    expect(await parsePageQuery({})).toEqual({ page: { limit: 50, includeTotal: false }, filters: {} });
  });

  it.each([
    ['1', 1],
    ['7', 7],
    ['50', 50],
    ['100', 100],
    ['007', 7],
  ])('accepts limit=%s', async (limit, expected) => {
    expect((await parsePageQuery({ limit })).page.limit).toBe(expected);
  });

  it.each(['0', '101', '-1', '-0', '1000', '10000000', '99999999999999999999999'])('rejects limit=%s as OutOfRange', async (limit) => {
    await expectIssue({ limit }, 'limit', ParameterIssue.OutOfRange);
  });

  it.each(['', 'abc', '1e3', '1.5', '1.0', '+5', ' 5', '5 ', '0x10', '5abc', 'Infinity', 'NaN'])(
    'rejects limit=%j as InvalidFormat',
    async (limit) => {
      await expectIssue({ limit }, 'limit', ParameterIssue.InvalidFormat);
    },
  );

  it('accepts includeTotal=true and false', async () => {
    expect((await parsePageQuery({ includeTotal: 'true' })).page.includeTotal).toBe(true);
    expect((await parsePageQuery({ includeTotal: 'false' })).page.includeTotal).toBe(false);
  });

  it.each(['', 'yes', 'TRUE', 'True', '1', '0', 'no'])('rejects includeTotal=%j as InvalidFormat', async (includeTotal) => {
    await expectIssue({ includeTotal }, 'includeTotal', ParameterIssue.InvalidFormat);
  });

  it('passes the cursor through untouched; only the service can judge it', async () => {
    expect(await parsePageQuery({ cursor: 'abc.def', limit: '3', includeTotal: 'true' })).toEqual({
      page: { cursor: 'abc.def', limit: 3, includeTotal: true },
      filters: {},
    });
  });

  it('rejects an empty or overlong cursor as InvalidCursor', async () => {
    await expectIssue({ cursor: '' }, 'cursor', ParameterIssue.InvalidCursor);
    await expectIssue({ cursor: 'x'.repeat(513) }, 'cursor', ParameterIssue.InvalidCursor);
    expect((await parsePageQuery({ cursor: 'x'.repeat(512) })).page.cursor).toHaveLength(512);
  });

  it.each(['limit', 'cursor', 'includeTotal', 'status'])('rejects %s given twice as InvalidFormat', async (name) => {
    await expectIssue({ [name]: ['1', '2'] }, name, ParameterIssue.InvalidFormat, ['status']);
  });

  it('rejects parameters that are not strings', async () => {
    await expectIssue({ limit: { nested: '1' } }, 'limit', ParameterIssue.InvalidFormat);
  });

  it('rejects an unknown parameter as UnknownField, case-sensitively', async () => {
    await expectIssue({ foo: '1' }, 'foo', ParameterIssue.UnknownField);
    await expectIssue({ Limit: '5' }, 'Limit', ParameterIssue.UnknownField);
    await expectIssue({ offset: '10' }, 'offset', ParameterIssue.UnknownField);
  });

  it.each(['a\u0000b', '\u0000', 'a\ud800'])('rejects a filter value %j that PostgreSQL could not take as InvalidFormat', async (value) => {
    await expectIssue({ status: value }, 'status', ParameterIssue.InvalidFormat, ['status']);
  });

  it('returns the declared filters apart from the page', async () => {
    expect(await parsePageQuery({ status: 'Planned', limit: '5' }, ['status', 'tag'])).toEqual({
      page: { limit: 5, includeTotal: false },
      filters: { status: 'Planned' },
    });
    await expectIssue({ status: 'Planned', reference: 'R' }, 'reference', ParameterIssue.UnknownField, ['status']);
  });

  it('judges paging parameters, repetitions and unknown names in the order of the URL', async () => {
    await expectIssue({ limit: '0', foo: '1' }, 'limit', ParameterIssue.OutOfRange);
    await expectIssue({ foo: '1', limit: '0' }, 'foo', ParameterIssue.UnknownField);
    await expectIssue({ includeTotal: 'yes', limit: ['1', '2'] }, 'includeTotal', ParameterIssue.InvalidFormat);
    await expectIssue({ cursor: '', includeTotal: 'yes' }, 'cursor', ParameterIssue.InvalidCursor);
  });

  it("judges a collection's filter rules after every paging parameter, in the order the class declares them", async () => {
    const shipments = async (query: Record<string, unknown>) => (await rejection(query, undefined, ListShipmentsQuery)).details;
    expect(await shipments({ status: 'Bogus', limit: '0' })).toEqual({ field: 'limit', issue: ParameterIssue.OutOfRange });
    expect(await shipments({ tag: '', status: 'Bogus' })).toEqual({ field: 'status', issue: ParameterIssue.InvalidFormat });
    expect(await shipments({ tag: '', reference: 'r'.repeat(201) })).toEqual({ field: 'reference', issue: ParameterIssue.OutOfRange });
    expect(await shipments({ tag: '', id: 'x' })).toEqual({ field: 'id', issue: ParameterIssue.UnknownField });
  });
});
