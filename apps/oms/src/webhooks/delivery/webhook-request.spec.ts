import { describe, expect, it } from 'vitest';
import { loggableText, MAX_LOGGED_BYTES } from './webhook-request.js';

// What jsonb refuses (one refused value fails a whole batch of outcomes) never reaches the delivery log.
describe('loggableText', () => {
  it('replaces U+0000 and lone surrogates with U+FFFD and keeps every other character', () => {
    expect(loggableText('a\u0000b \ud800 c\udc00 é 😀')).toBe('a\uFFFDb \uFFFD c\uFFFD é 😀');
  });

  it('cuts at MAX_LOGGED_BYTES of UTF-8, never inside a character', () => {
    const text = 'x' + '€'.repeat(MAX_LOGGED_BYTES); // 1 + 3 bytes each: the limit falls inside a euro sign
    const kept = loggableText(text);
    expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(MAX_LOGGED_BYTES);
    expect(kept).toBe('x' + '€'.repeat((MAX_LOGGED_BYTES - 1 - ((MAX_LOGGED_BYTES - 1) % 3)) / 3));
    expect(loggableText('short')).toBe('short');
  });
});
