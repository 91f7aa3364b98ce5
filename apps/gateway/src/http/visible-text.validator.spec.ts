import { describe, expect, it } from 'vitest';
import { hasVisibleCharacter } from './visible-text.validator.js';

describe('hasVisibleCharacter', () => {
  it.each([
    ['spaces', '   '],
    ['a zero-width space', '\u200b'],
    ['zero-width space and non-joiner', '\u200b\u200c'],
    ['a byte order mark', '\ufeff'],
    ['control characters', '\u0001\u0007\u007f\u0085'],
    ['tabs and line breaks', '\t\n\r'],
    ['no-break and ideographic spaces', '\u00a0\u3000'],
    ['a word joiner, direction marks and a Hangul filler', '\u2060\u200e\u200f\u3164'],
    ['a variation selector and the Braille blank', '\ufe0f\u2800'],
  ])('is false for %s', (_case, text) => {
    expect(hasVisibleCharacter(text)).toBe(false);
  });

  it.each(['a', ' a ', '\u200bA\u200b', 'é', 'e\u0301', '日本', '😀', '·', '-'])('is true for %j', (text) => {
    expect(hasVisibleCharacter(text)).toBe(true);
  });
});
