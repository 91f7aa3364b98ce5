import { describe, expect, it } from 'vitest';
import { TurnBatch } from './turn-batch.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('TurnBatch', () => {
  it('runs the work of one turn after it, together and in order; work added meanwhile waits for the next turn', async () => {
    const batch = new TurnBatch();
    const ran: string[] = [];
    batch.add(() => ran.push('a'));
    await Promise.resolve();
    batch.add(() => {
      ran.push('b');
      batch.add(() => ran.push('d'));
    });
    batch.add(() => ran.push('c'));
    expect(ran).toEqual([]);
    await nextTurn();
    expect(ran).toEqual(['a', 'b', 'c']);
    await nextTurn();
    expect(ran).toEqual(['a', 'b', 'c', 'd']);
  });

  it('runs the rest of a batch when one work throws, then throws the first exception', () => {
    const batch = new TurnBatch();
    const ran: number[] = [];
    batch.add(() => ran.push(1));
    batch.add(() => {
      throw new Error('first');
    });
    batch.add(() => {
      throw new Error('second');
    });
    batch.add(() => ran.push(4));
    expect(() => batch.flush()).toThrow('first');
    expect(ran).toEqual([1, 4]);
    expect(() => batch.flush()).not.toThrow();
  });
});
