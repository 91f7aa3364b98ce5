import { describe, expect, it } from 'vitest';
import { echo, MAX_ECHOED_CHARS } from './echo.js';

describe('echo', () => {
  it('keeps short text and cuts long text to the bound, the cut marked', () => {
    expect(echo('temperatureC')).toBe('temperatureC');
    const cut = echo('k'.repeat(1000));
    expect(cut).toHaveLength(MAX_ECHOED_CHARS);
    expect(cut.endsWith('\u2026')).toBe(true);
  });

  it('never splits a surrogate pair', () => {
    const cut = echo('a'.repeat(MAX_ECHOED_CHARS - 2) + '\u{1F600}'.repeat(10));
    expect(cut).toBe('a'.repeat(MAX_ECHOED_CHARS - 2) + '\u2026');
  });
});
