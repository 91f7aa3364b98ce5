import { describe, expect, it } from 'vitest';
import { uuidV7s } from './uuid-v7.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('uuidV7s', () => {
  it('writes UUIDv7s of the given millisecond, all different', () => {
    const now = Date.UTC(2026, 10, 24, 12, 0, 0, 123);
    const ids = uuidV7s(10000, now);
    expect(ids.every((id) => UUID_V7.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids.slice(0, 10)) expect(parseInt(id.replace('-', '').slice(0, 12), 16)).toBe(now);
  });

  it('spreads the random bits: every hex digit appears in every random position', () => {
    const ids = uuidV7s(5000);
    for (const position of [15, 16, 17, 20, 21, 22, 24, 35]) {
      expect(new Set(ids.map((id) => id[position])).size, `position ${position}`).toBe(position === 19 ? 4 : 16);
    }
    expect(new Set(ids.map((id) => id[19]))).toEqual(new Set(['8', '9', 'a', 'b']));
  });
});
