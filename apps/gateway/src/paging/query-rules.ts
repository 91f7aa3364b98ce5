import { ParameterIssue } from '@tracking/contracts';
import { DATE_TIME_MAX, DATE_TIME_MIN, parseDateTime } from '@tracking/core';
import { ValidateBy } from 'class-validator';
import { validate as isUuid } from 'uuid';

/**
 * The issue (`details.issue`) each rule of a query parameter reports. Every rule below checks one thing
 * and lets what another rule refuses pass, so a bad parameter fails exactly one rule.
 */
export const QUERY_RULE_ISSUES: ReadonlyMap<string, ParameterIssue> = new Map([
  ['isWholeNumber', ParameterIssue.InvalidFormat],
  ['isPageLimit', ParameterIssue.OutOfRange],
  ['isTrueOrFalse', ParameterIssue.InvalidFormat],
  ['isCursorText', ParameterIssue.InvalidCursor],
  ['isEnumList', ParameterIssue.InvalidFormat],
  ['isFilterLength', ParameterIssue.OutOfRange],
  ['isUuidFilter', ParameterIssue.InvalidFormat],
  ['isDateTimeFilter', ParameterIssue.InvalidFormat],
]);

/** A rule on a query parameter, which is a string when given (the query hygiene refuses anything else first). */
function queryRule(name: string, test: (value: string) => boolean, message: string): PropertyDecorator {
  if (!QUERY_RULE_ISSUES.has(name)) throw new Error(`query rule ${name} has no issue`);
  // The pipe adds the final period.
  return ValidateBy({ name, validator: { validate: (value: unknown) => typeof value !== 'string' || test(value), defaultMessage: () => message } });
}

const WHOLE_NUMBER = /^-?\d+$/;

/** A whole number (InvalidFormat otherwise: `1e3`, `1.5`, `+5`, ` 5`) from `min` to `max` (OutOfRange otherwise). */
export function IsPageLimit(name: string, min: number, max: number): PropertyDecorator {
  const format = queryRule('isWholeNumber', (value) => WHOLE_NUMBER.test(value), `${name} must be a whole number from ${min} to ${max}`);
  const range = queryRule(
    'isPageLimit',
    (value) => !WHOLE_NUMBER.test(value) || (Number(value) >= min && Number(value) <= max),
    `${name} must be from ${min} to ${max}`,
  );
  return (target, key) => {
    format(target, key);
    range(target, key);
  };
}

/** Exactly `true` or `false`. */
export function IsTrueOrFalse(name: string): PropertyDecorator {
  return queryRule('isTrueOrFalse', (value) => value === 'true' || value === 'false', `${name} must be true or false`);
}

/** A cursor worth handing to the service, which alone can judge it: not empty and no longer than `max`. */
export function IsCursorText(max: number): PropertyDecorator {
  return queryRule(
    'isCursorText',
    (value) => value !== '' && value.length <= max,
    'The cursor is not valid; use metadata.nextCursor of the previous page',
  );
}

/**
 * One or more comma-separated values of `values` (`status=Planned,InTransit`), each spelled exactly as the
 * API writes it; an empty, unknown or misspelled entry is InvalidFormat.
 */
export function IsEnumList(name: string, values: Record<string, string>): PropertyDecorator {
  const allowed = new Set<string>(Object.values(values));
  return queryRule(
    'isEnumList',
    (value) => value.split(',').every((entry) => allowed.has(entry)),
    `${name} must be one or more of ${[...allowed].join(', ')}, separated by commas`,
  );
}

/** A filter matched exactly against a field of `min`..`max` characters; another length can match nothing and is OutOfRange. */
export function IsFilterLength(name: string, min: number, max: number): PropertyDecorator {
  return queryRule(
    'isFilterLength',
    // Counted in characters (code points), as the body rules and PostgreSQL count them.
    (value) => [...value].length >= min && [...value].length <= max,
    `${name} must be ${min} to ${max} characters long`,
  );
}

/** A filter naming a resource by id: a UUID in any case (InvalidFormat otherwise). */
export function IsUuidFilter(name: string): PropertyDecorator {
  return queryRule('isUuidFilter', (value) => isUuid(value), `${name} must be a UUID`);
}

/** A filter on a date-time: RFC 3339 with a time zone, years 0001 to 9999 (InvalidFormat otherwise). */
export function IsDateTimeFilter(name: string): PropertyDecorator {
  return queryRule(
    'isDateTimeFilter',
    (value) => {
      const instant = parseDateTime(value)?.getTime();
      return instant !== undefined && instant >= DATE_TIME_MIN && instant <= DATE_TIME_MAX;
    },
    `${name} must be an RFC 3339 date-time with a time zone, such as 2026-12-01T08:00:00Z`,
  );
}

/** The entries of a valid comma list, each once. */
export function enumList<T extends string>(value: string | undefined): T[] | undefined {
  return value === undefined ? undefined : [...new Set(value.split(',') as T[])];
}
