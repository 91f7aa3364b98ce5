import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from './pg-errors.js';

/** An error as `pg` raises it: a message and, for server errors, a SQLSTATE `code`. */
function pgError(message: string, code?: string): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}

describe('isDatabaseUnavailable', () => {
  it.each([
    ['a connection exception (class 08)', pgError('connection failure', '08006')],
    ['a terminated session (57P01)', pgError('terminating connection due to administrator command', '57P01')],
    ['a server starting up (57P03)', pgError('the database system is starting up', '57P03')],
    ['a database with no connections left (53300)', pgError('too many connections for database "x"', '53300')],
    ['a database that refuses connections (55000)', pgError('database "x" is not currently accepting connections', '55000')],
    ['a refused socket', pgError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['a connection that broke', pgError('Connection terminated unexpectedly')],
    ["the pool's connection timeout", pgError('timeout exceeded when trying to connect')],
    ['a transaction whose connection was dropped', Object.assign(new Error('already released'), { name: 'QueryRunnerAlreadyReleasedError' })],
    ['an entity manager whose connection was dropped', Object.assign(new Error('already released'), { name: 'QueryRunnerProviderAlreadyReleasedError' })],
  ])('recognises %s', (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('looks through TypeORM\'s driverError and an error\'s cause', () => {
    expect(isDatabaseUnavailable({ message: 'Query failed', driverError: pgError('x', '57P01') })).toBe(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated due to connection timeout', { cause: pgError('x', 'ETIMEDOUT') }))).toBe(true);
    expect(isDatabaseUnavailable(new Error('wrapped', { cause: pgError('Connection terminated unexpectedly') }))).toBe(true);
  });

  it.each([
    ['a unique violation', pgError('duplicate key value violates unique constraint "x"', '23505')],
    ['a lock timeout', pgError('canceling statement due to lock timeout', '55P03')],
    ['another object-state error', pgError('cannot drop the currently open database', '55006')],
    ['a syntax error', pgError('syntax error at or near "x"', '42601')],
    ['a plain error', new Error('boom')],
    ['a non-error', 'Connection terminated'],
    ['null', null],
  ])('does not take %s for an outage', (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
