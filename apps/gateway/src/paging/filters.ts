import { ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { validate as isUuid } from 'uuid';

/**
 * A filter of one or more comma-separated values of `values` (`status=Planned,InTransit`), each spelled
 * exactly as the API writes it; an empty, unknown or misspelled entry is InvalidFormat. Repeats count once.
 */
export function parseEnumListFilter<T extends string>(name: string, value: string, values: Record<string, T>): T[] {
  const allowed = new Set<string>(Object.values(values));
  const entries = value.split(',');
  if (!entries.every((entry) => allowed.has(entry))) {
    throw DomainError.invalidParameter(
      name,
      ParameterIssue.InvalidFormat,
      `${name} must be one or more of ${[...allowed].join(', ')}, separated by commas.`,
    );
  }
  return [...new Set(entries as T[])];
}

/** A filter matched exactly against a field of `min`..`max` characters; another length can match nothing and is OutOfRange. */
export function parseTextFilter(name: string, value: string, min: number, max: number): string {
  // Counted in characters (code points), as the body rules and PostgreSQL count them.
  const length = [...value].length;
  if (length < min || length > max) {
    throw DomainError.invalidParameter(name, ParameterIssue.OutOfRange, `${name} must be ${min} to ${max} characters long.`);
  }
  return value;
}

/** A filter naming a resource by id: a UUID in any case, answered lower-case; anything else is InvalidFormat. */
export function parseUuidFilter(name: string, value: string): string {
  if (!isUuid(value)) throw DomainError.invalidParameter(name, ParameterIssue.InvalidFormat, `${name} must be a UUID.`);
  return value.toLowerCase();
}
