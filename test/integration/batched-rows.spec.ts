import { randomUUID } from 'node:crypto';
import { batchedRows, createServiceDataSource, ensureDatabase, MAX_BATCH, observeBatches, preparedRows } from '@tracking/database';
import { databaseUrl, dropDatabases } from '@tracking/testing';
import fc from 'fast-check';
import type { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// A keyset page as the services ask for one: scope, position and limit as parameters.
const PAGE = 'SELECT seq, label FROM items WHERE owner = $1 AND seq > $2 ORDER BY seq LIMIT $3';
const PAGE_TYPES = ['uuid', 'bigint', 'integer'];
const OWNERS = [randomUUID(), randomUUID(), randomUUID()];
const ROWS_PER_OWNER = 40;

type PageRow = [seq: string, label: string];

describe('batchedRows: the calls of one turn share one statement', () => {
  const prefix = `${inject('runId')}_batched_rows_${process.pid}_`;
  let dataSource: DataSource;
  let other: DataSource;
  /** Every statement text sent to the first data source's pool, in order. */
  const sent: string[] = [];

  async function connect(name: string): Promise<DataSource> {
    const url = databaseUrl(`${prefix}${name}`);
    await ensureDatabase(url);
    const source = createServiceDataSource({ url, poolSize: 4, entities: [], migrations: [], applicationName: 'test' });
    await source.initialize();
    await source.query('CREATE TABLE items (seq bigint PRIMARY KEY, owner uuid NOT NULL, label text NOT NULL)');
    return source;
  }

  beforeAll(async () => {
    await dropDatabases(prefix);
    [dataSource, other] = await Promise.all([connect('a'), connect('b')]);
    // Interleaved as concurrent writers leave them: an owner's rows are not together.
    await dataSource.query(
      `INSERT INTO items SELECT n, ($1::uuid[])[1 + n % 3], 'item ' || n FROM generate_series(1, ${3 * ROWS_PER_OWNER}) AS n`,
      [OWNERS],
    );
    await other.query("INSERT INTO items VALUES (1, $1, 'other database')", [OWNERS[0]]);
    // Observes, never changes, what reaches PostgreSQL.
    const pool = (dataSource.driver as unknown as { master: { query: (config: { text: string }) => unknown } }).master;
    const query = pool.query.bind(pool);
    pool.query = (config) => {
      sent.push(config.text);
      return query(config);
    };
  });
  afterAll(async () => {
    await Promise.all([dataSource?.destroy(), other?.destroy()]);
    await dropDatabases(prefix);
  });

  const alone = (values: unknown[]) => preparedRows<PageRow>(dataSource, PAGE, values);
  const batched = (values: unknown[], source = dataSource) => batchedRows<PageRow>(source, PAGE, PAGE_TYPES, values);

  it('gives each call the rows it gets alone, whatever the mix of calls in the turn', async () => {
    const call = fc.tuple(fc.constantFrom(...OWNERS, randomUUID()), fc.integer({ min: 0, max: 130 }), fc.integer({ min: 1, max: 60 }));
    await fc.assert(
      fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: MAX_BATCH + 8 }), async (calls) => {
        const expected = await Promise.all(calls.map(([owner, after, limit]) => alone([owner, String(after), limit])));
        sent.length = 0;
        const actual = await Promise.all(calls.map(([owner, after, limit]) => batched([owner, String(after), limit])));
        expect(actual).toEqual(expected);
        // One statement for up to MAX_BATCH calls of the turn; a call alone runs as it is.
        expect(sent).toHaveLength(Math.ceil(calls.length / MAX_BATCH));
        if (calls.length === 1) expect(sent).toEqual([PAGE]);
      }),
      { numRuns: 40 },
    );
  });

  it('a call that fails fails alone: the others of its turn get their rows', async () => {
    sent.length = 0;
    const results = await Promise.allSettled([
      batched([OWNERS[0], '0', 5]),
      batched(['not a uuid', '0', 5]),
      batched([OWNERS[1], '0', 5]),
    ]);
    // The batch, then each of its calls on its own.
    expect(sent.filter((text) => text === PAGE)).toHaveLength(3);
    expect(sent).toHaveLength(4);
    expect(results[0]).toEqual({ status: 'fulfilled', value: await alone([OWNERS[0], '0', 5]) });
    expect(results[1]).toMatchObject({ status: 'rejected', reason: { code: '22P02' } });
    expect(results[2]).toEqual({ status: 'fulfilled', value: await alone([OWNERS[1], '0', 5]) });
  });

  it('never mixes the calls of two data sources', async () => {
    const [here, there] = await Promise.all([batched([OWNERS[0], '0', 2]), batched([OWNERS[0], '0', 2], other)]);
    expect(here).toEqual([
      ['3', 'item 3'],
      ['6', 'item 6'],
    ]);
    expect(there).toEqual([['1', 'other database']]);
  });

  it('answers calls of different statements in the same turn each with its own', async () => {
    const count = 'SELECT count(*)::int FROM items WHERE owner = $1';
    const [page, total] = await Promise.all([batched([OWNERS[1], '0', 1]), batchedRows<[number]>(dataSource, count, ['uuid'], [OWNERS[1]])]);
    expect(page).toEqual([['1', 'item 1']]);
    expect(total).toEqual([[ROWS_PER_OWNER]]);
  });

  it('tells the data source\'s observer how many calls each statement answers', async () => {
    const observed: number[] = [];
    const elsewhere: number[] = [];
    observeBatches(dataSource, (calls) => observed.push(calls));
    observeBatches(other, (calls) => elsewhere.push(calls));
    await Promise.all(Array.from({ length: MAX_BATCH + 3 }, (_, n) => batched([OWNERS[n % 3], '0', 1])));
    await batched([OWNERS[0], '0', 1]);
    await batched([OWNERS[0], '0', 1], other);
    expect(observed).toEqual([MAX_BATCH, 3, 1]);
    expect(elsewhere).toEqual([1]);
    // An observer that fails never costs a read its answer.
    observeBatches(dataSource, () => {
      throw new Error('metric broken');
    });
    const answers = await Promise.all([batched([OWNERS[0], '0', 1]), batched([OWNERS[1], '0', 1])]);
    expect(answers).toEqual([[['3', 'item 3']], [['1', 'item 1']]]);
  });

  it('refuses array types and values that do not match the types', () => {
    expect(() => batchedRows(dataSource, 'SELECT $1', ['text[]'], [['a']])).toThrow(/not a scalar type/);
    expect(() => batchedRows(dataSource, PAGE, PAGE_TYPES, [OWNERS[0]])).toThrow(/1 values for 3 types/);
    expect(() => batchedRows(dataSource, 'SELECT $2', ['text'], ['a'])).toThrow(/\$2 has no type/);
  });
});
