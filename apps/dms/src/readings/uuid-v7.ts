import { randomFillSync } from 'node:crypto';

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));
const VARIANT = ['8', '9', 'a', 'b'];

/**
 * `count` UUIDv7s (RFC 9562) of the instant `now`: 48 bits of Unix milliseconds, then 74 random bits,
 * from one call to the random source. The `uuid` package's `v7()` costs about 6 µs each (a random-source
 * call and a monotonic counter per id), which at 30000 readings/s was a tenth of the DMS's time; the ids
 * of a batch need no order among themselves (readings page by `seq`).
 */
export function uuidV7s(count: number, now = Date.now()): string[] {
  const random = Buffer.allocUnsafe(count * 10);
  randomFillSync(random);
  const time = now.toString(16).padStart(12, '0');
  const prefix = `${time.slice(0, 8)}-${time.slice(8, 12)}-7`;
  const ids = new Array<string>(count);
  const byte = (index: number): string => HEX[random[index] ?? 0] ?? '00';
  for (let i = 0, o = 0; i < count; i++, o += 10) {
    const spread = random[o + 2] ?? 0;
    ids[i] =
      `${prefix}${byte(o).slice(1)}${byte(o + 1)}-${VARIANT[spread & 3] ?? '8'}${byte(o + 3).slice(1)}${byte(o + 4)}-` +
      `${byte(o + 5)}${byte(o + 6)}${byte(o + 7)}${byte(o + 8)}${byte(o + 9)}${HEX[spread >> 2] ?? '00'}`;
  }
  return ids;
}
