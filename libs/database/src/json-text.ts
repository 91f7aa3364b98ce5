/**
 * Pieces for building a response's JSON from PostgreSQL's text output (`preparedRows`), for the hottest
 * reads: no entity, no `Date`, no `JSON.stringify` of objects.
 */

/**
 * SQL for a `timestamptz` column as an RFC 3339 UTC date-time with milliseconds, as `Date.toISOString()`
 * writes it (`toDateTime` of `@tracking/core`); null stays null.
 */
export const sqlDateTime = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A number as `JSON.stringify` writes it (the driver parses `double precision`), or null. */
export const jsonNumber = (value: number | null): string => (value === null ? 'null' : JSON.stringify(value));

/** A JSON string, or null: for text that may need escaping (names, references). */
export const jsonText = (value: string | null): string => (value === null ? 'null' : JSON.stringify(value));

/**
 * A JSON string, or null, for text that never needs escaping: a UUID, an enum value, a date-time of
 * `sqlDateTime`.
 */
export const jsonPlain = (value: string | null): string => (value === null ? 'null' : `"${value}"`);

/** A JSON value PostgreSQL already wrote as JSON (`jsonb::text`, `array_to_json(…)::text`), or null. */
export const jsonRaw = (value: string | null): string => value ?? 'null';
