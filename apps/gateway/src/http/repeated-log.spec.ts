import { afterEach, describe, expect, it, vi } from 'vitest';
import { RepeatedLog } from './repeated-log.js';

describe('RepeatedLog', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes the first line of a kind at once, then one per interval with the number left out', () => {
    vi.useFakeTimers();
    const log = new RepeatedLog(1000);
    const written: Array<[string, number]> = [];
    const report = (kind: string) => log.report(kind, (suppressed) => written.push([kind, suppressed]));
    for (let i = 0; i < 50; i++) report('ServiceUnavailable: no responders');
    report('InternalError: boom');
    expect(written).toEqual([
      ['ServiceUnavailable: no responders', 0],
      ['InternalError: boom', 0],
    ]);
    vi.advanceTimersByTime(1000);
    report('ServiceUnavailable: no responders');
    expect(written.at(-1)).toEqual(['ServiceUnavailable: no responders', 49]);
  });

  it('forgets the oldest kind beyond its capacity', () => {
    const log = new RepeatedLog(60000, 2);
    const written: string[] = [];
    for (const kind of ['a', 'b', 'c', 'a']) log.report(kind, () => written.push(kind));
    // `a` was forgotten when `c` came, so it is written again.
    expect(written).toEqual(['a', 'b', 'c', 'a']);
  });
});
