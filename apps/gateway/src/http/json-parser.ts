import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyInstance } from 'fastify';
import { MAX_BODY_DEPTH } from '@tracking/readings';

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const BOM = '\ufeff';

/** What became of a JSON body, the `outcome` label of `gateway_json_bodies_total`. */
export type JsonBodyOutcome = 'parsed' | 'too_deep' | 'invalid';

/**
 * The deepest nesting of objects and arrays in JSON text, the outermost counting as one, scanning no
 * further than the first container beyond `max` (so a hostile body costs at most one pass over its bytes,
 * and usually a few dozen). Brackets inside strings do not count; every byte of a multi-byte UTF-8
 * character is above 0x7f, so none is mistaken for a bracket or a quote. Malformed text is left to
 * JSON.parse.
 */
export function jsonDepthExceeds(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < bytes.length; index++) {
    const byte = bytes[index];
    if (inString) {
      if (byte === BACKSLASH) index++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/**
 * Fastify's JSON parser, replaced: the body is read as bytes (within the route's body limit, after the
 * token check of `Authenticator`), its nesting depth is checked by a linear scan, and only then is it
 * given to JSON.parse. JSON.parse itself is not recursive in V8, but 4 MiB of `[[[[` costs it seconds
 * and hundreds of MiB; the scan refuses the same body after 33 bytes. `__proto__` and `constructor`
 * stay plain data, as JSON.parse keeps them; the validation pipe refuses them by name.
 */
export function registerJsonParser(instance: FastifyInstance, count: (outcome: JsonBodyOutcome) => void): void {
  instance.removeContentTypeParser('application/json');
  instance.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    const bytes = body as Buffer;
    if (bytes.length === 0) {
      done(new DomainError(ErrorCode.MalformedRequest, 'The request declares a JSON body but sends none.'), undefined);
      return;
    }
    if (jsonDepthExceeds(bytes, MAX_BODY_DEPTH)) {
      count('too_deep');
      done(new DomainError(ErrorCode.MalformedRequest, `The request body nests JSON deeper than ${MAX_BODY_DEPTH} levels.`), undefined);
      return;
    }
    let text = bytes.toString('utf8');
    // As Fastify's own parser: a leading byte order mark is not part of the JSON.
    if (text.startsWith(BOM)) text = text.slice(1);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      count('invalid');
      done(new DomainError(ErrorCode.MalformedRequest, 'The request body is not valid JSON.'), undefined);
      return;
    }
    count('parsed');
    done(null, parsed);
  });
}
