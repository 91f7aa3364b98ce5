import { describe, expect, it } from 'vitest';
import { rpcDeadline } from './rpc-deadline.js';

const NOW = 1_764_300_000_000;

describe('rpcDeadline', () => {
  it('counts the timeout from the sending: the time the request took to arrive is taken off', () => {
    expect(rpcDeadline('400', String(NOW), NOW)).toBe(NOW + 400);
    // It waited 120 ms in queues on its way: the caller gives up 280 ms from now.
    expect(rpcDeadline('400', String(NOW - 120), NOW)).toBe(NOW + 280);
  });

  it('trusts the two clocks only so far: a transit below zero counts as none, one above half the timeout as half', () => {
    // This host's clock runs behind the sender's.
    expect(rpcDeadline('400', String(NOW + 5000), NOW)).toBe(NOW + 400);
    // It runs far ahead (or the request waited that long): the request keeps half its time, it is not refused outright.
    expect(rpcDeadline('400', String(NOW - 60_000), NOW)).toBe(NOW + 200);
    expect(rpcDeadline('400', String(NOW - 200), NOW)).toBe(NOW + 200);
  });

  it('counts from the arrival when the sender says nothing usable about when it sent', () => {
    expect(rpcDeadline('400', undefined, NOW)).toBe(NOW + 400);
    expect(rpcDeadline('400', '', NOW)).toBe(NOW + 400);
    expect(rpcDeadline('400', 'yesterday', NOW)).toBe(NOW + 400);
  });

  it('gives no deadline without a usable timeout', () => {
    expect(rpcDeadline(undefined, String(NOW), NOW)).toBeUndefined();
    expect(rpcDeadline('', String(NOW), NOW)).toBeUndefined();
    expect(rpcDeadline('soon', String(NOW), NOW)).toBeUndefined();
    expect(rpcDeadline('-1', String(NOW), NOW)).toBeUndefined();
    expect(rpcDeadline('Infinity', String(NOW), NOW)).toBeUndefined();
    expect(rpcDeadline('0', String(NOW), NOW)).toBe(NOW);
  });
});
