/**
 * Characters of a client's own key or value that an error or a rejection repeats (a field name in
 * `details.field` and in the message). A body of a few long unknown keys would otherwise come back
 * twice as large, and be stored as large again under an idempotency key (docs/api.md, "Errors").
 */
export const MAX_ECHOED_CHARS = 64;
/** The most characters of `details.field` and of a message in an error envelope, whatever built them. */
export const MAX_ENVELOPE_FIELD_CHARS = 256;
export const MAX_ENVELOPE_MESSAGE_CHARS = 1024;

const ELLIPSIS = '\u2026';

/**
 * `text` cut to `max` characters, the cut marked with `…` (which counts in `max`); never splits a
 * surrogate pair, so the result is still valid UTF-16.
 */
export function echo(text: string, max = MAX_ECHOED_CHARS): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end) + ELLIPSIS;
}
