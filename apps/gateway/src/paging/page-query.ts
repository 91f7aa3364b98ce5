import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, type PageRequest, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { isStorableText } from '../http/body-hygiene.js';

const MAX_CURSOR_LENGTH = 512;

/**
 * Parses `cursor`, `limit` and `includeTotal` strictly (docs/api.md, "Paging") and returns the other
 * query parameters, which must all be in `filters` (anything else is `UnknownField`) and hold
 * storable text (`InvalidFormat` otherwise).
 */
export function parsePageQuery(
  query: Record<string, unknown>,
  filters: readonly string[] = [],
): { page: PageRequest; filters: Record<string, string> } {
  const page: PageRequest = { limit: DEFAULT_PAGE_LIMIT, includeTotal: false };
  const rest: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) {
    if (typeof value !== 'string') {
      throw DomainError.invalidParameter(name, ParameterIssue.InvalidFormat, `${name} must be given once.`);
    }
    switch (name) {
      case 'limit':
        // Any whole number is well-formed; one outside 1..100 (-1, 0, 101, 10000000) is OutOfRange.
        if (!/^-?\d+$/.test(value)) {
          throw DomainError.invalidParameter('limit', ParameterIssue.InvalidFormat, 'limit must be a whole number from 1 to 100.');
        }
        page.limit = Number(value);
        if (page.limit < 1 || page.limit > MAX_PAGE_LIMIT) {
          throw DomainError.invalidParameter('limit', ParameterIssue.OutOfRange, 'limit must be from 1 to 100.');
        }
        break;
      case 'includeTotal':
        if (value !== 'true' && value !== 'false') {
          throw DomainError.invalidParameter('includeTotal', ParameterIssue.InvalidFormat, 'includeTotal must be true or false.');
        }
        page.includeTotal = value === 'true';
        break;
      case 'cursor':
        if (value === '' || value.length > MAX_CURSOR_LENGTH) {
          throw DomainError.invalidParameter(
            'cursor',
            ParameterIssue.InvalidCursor,
            'The cursor is not valid; use metadata.nextCursor of the previous page.',
          );
        }
        page.cursor = value;
        break;
      default:
        if (!filters.includes(name)) {
          throw DomainError.invalidParameter(name, ParameterIssue.UnknownField, `${name} is not a parameter of this collection.`);
        }
        // A NUL could match nothing, and PostgreSQL refuses it in a query rather than answering no rows.
        if (!isStorableText(value)) {
          const message = `${name} contains a NUL character or an unpaired UTF-16 surrogate.`;
          throw DomainError.invalidParameter(name, ParameterIssue.InvalidFormat, message);
        }
        rest[name] = value;
    }
  }
  return { page, filters: rest };
}
