import type { DataSource } from 'typeorm';
import { preparedRows } from './prepared-rows.js';

/** The most calls one batched statement answers; more wait for the next statement, sent beside it. */
export const MAX_BATCH = 32;

interface Call {
  values: readonly unknown[];
  resolve: (rows: unknown[][]) => void;
  reject: (error: unknown) => void;
}

interface Statement {
  text: string;
  types: readonly string[];
  batchText: string;
  calls: Call[];
}

/**
 * The statements of the current turn, per data source. A new `Map` each turn, dropped at its end: one
 * long-lived `Map` that statements came and went in would keep every call it held, and what the call's
 * promise reaches, until a full garbage collection (docs/benchmark-history.md, "The seventh round").
 */
const turns = new WeakMap<DataSource, Map<string, Statement>>();
const batchTexts = new Map<string, string>();
const observers = new WeakMap<DataSource, (calls: number) => void>();

/**
 * Has `observer` told, for every statement `batchedRows` sends on `dataSource`, how many calls it answers
 * (1: a call that ran alone), for a metric. One observer per data source; a later one replaces it.
 */
export function observeBatches(dataSource: DataSource, observer: (calls: number) => void): void {
  observers.set(dataSource, observer);
}

/** Whether `batchedRows` takes parameters of these types: scalar type names (`uuid`, `bigint`), no arrays. */
export function batchableTypes(types: readonly string[]): boolean {
  return types.every((type) => /^[a-z][a-z0-9 _]*$/.test(type));
}

/**
 * Runs `text` as `preparedRows` does, but together with the other calls of the same statement made in
 * the same turn of the event loop: one statement, one round trip and one PostgreSQL backend for all of
 * them, instead of one each. Under load the hot reads arrive several per turn (a socket read brings
 * several messages), and each statement of its own costs a system call that wakes a backend, a backend's
 * protocol and executor start-up, and a pooled connection; alone, a call runs exactly as `preparedRows`.
 *
 * Speed machinery (docs/architecture.md, "Speed machinery"): the simple version is `preparedRows` per
 * call. It cut PostgreSQL's CPU per page by two thirds (docs/benchmark-history.md, "The sixth round").
 *
 * `types` gives each parameter's PostgreSQL type (`uuid`, `bigint`, `text`...), scalar types only: the
 * batch passes parameter `$n` of every call as one array `$n::type[]` and runs `text` once per element in
 * a `LATERAL` subquery, so `text` must be a single `SELECT` (its own `ORDER BY` and `LIMIT` apply to each
 * call) whose `$n` all stand for parameters (no `$` in its literals). Each call gets the rows of its own
 * parameters, in the order the subquery gives them. If the batched statement fails, each call is run on
 * its own, so that a failure is only ever the failing call's.
 */
export function batchedRows<Row extends unknown[]>(
  dataSource: DataSource,
  text: string,
  types: readonly string[],
  values: readonly unknown[],
): Promise<Row[]> {
  if (types.length !== values.length) throw new Error(`batchedRows: ${values.length} values for ${types.length} types`);
  const turn = turns.get(dataSource) ?? startTurn(dataSource);
  const key = `${types.join(',')}\n${text}`;
  let statement = turn.get(key);
  if (!statement) turn.set(key, (statement = { text, types, batchText: batchText(key, text, types), calls: [] }));
  const calls = statement.calls;
  return new Promise<unknown[][]>((resolve, reject) => calls.push({ values, resolve, reject })) as Promise<Row[]>;
}

/** The statements of this turn on `dataSource`, run at its end (`setImmediate`) in the order they came. */
function startTurn(dataSource: DataSource): Map<string, Statement> {
  const turn = new Map<string, Statement>();
  turns.set(dataSource, turn);
  setImmediate(() => {
    turns.delete(dataSource);
    for (const statement of turn.values()) run(dataSource, statement);
  });
  return turn;
}

function run(dataSource: DataSource, statement: Statement): void {
  for (let start = 0; start < statement.calls.length; start += MAX_BATCH) {
    const calls = statement.calls.slice(start, start + MAX_BATCH);
    try {
      observers.get(dataSource)?.(calls.length);
    } catch {
      // A metric never stands in the way of the reads.
    }
    const [first] = calls;
    if (first && calls.length === 1) runAlone(dataSource, statement, first);
    else void runBatch(dataSource, statement, calls);
  }
}

function runAlone(dataSource: DataSource, statement: Statement, call: Call): void {
  preparedRows(dataSource, statement.text, [...call.values]).then(call.resolve, call.reject);
}

async function runBatch(dataSource: DataSource, statement: Statement, calls: Call[]): Promise<void> {
  const params = statement.types.map((_, n) => calls.map((call) => call.values[n]));
  let results: Map<number, unknown[][]>;
  try {
    results = byOrdinal(await preparedRows<unknown[]>(dataSource, statement.batchText, params));
  } catch {
    for (const call of calls) runAlone(dataSource, statement, call);
    return;
  }
  calls.forEach((call, index) => call.resolve(results.get(index + 1) ?? []));
}

/** The rows of a batched statement by the ordinal of their call, which each row ends with (taken off). */
function byOrdinal(rows: unknown[][]): Map<number, unknown[][]> {
  const results = new Map<number, unknown[][]>();
  for (const row of rows) {
    const ordinal = Number(row.pop());
    const own = results.get(ordinal);
    if (own) own.push(row);
    else results.set(ordinal, [row]);
  }
  return results;
}

/**
 * `text` run once per element of the parameter arrays: `SELECT q.*, b._i FROM unnest($1::uuid[], ...)
 * WITH ORDINALITY AS b(_p1, ..., _i) CROSS JOIN LATERAL (text with $n as b._pn) q`. The names are
 * unlikely ones, as the subquery's own names would hide them.
 */
function batchText(key: string, text: string, types: readonly string[]): string {
  let batched = batchTexts.get(key);
  if (batched === undefined) {
    const refused = types.find((type) => !batchableTypes([type]));
    if (refused !== undefined) throw new Error(`batchedRows: ${refused} is not a scalar type name`);
    const arrays = types.map((type, n) => `$${n + 1}::${type}[]`).join(', ');
    const columns = types.map((_, n) => `_p${n + 1}`).join(', ');
    const subquery = text.replace(/\$(\d+)/g, (_, n: string) => {
      if (Number(n) < 1 || Number(n) > types.length) throw new Error(`batchedRows: $${n} has no type`);
      return `_tracking_batch._p${n}`;
    });
    batched = `SELECT _q.*, _tracking_batch._i FROM unnest(${arrays}) WITH ORDINALITY AS _tracking_batch(${columns}, _i) CROSS JOIN LATERAL (${subquery}) AS _q`;
    batchTexts.set(key, batched);
  }
  return batched;
}
