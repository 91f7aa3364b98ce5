import { type PageRequest, type ShipmentFilters, ShipmentStatus } from '@tracking/contracts';
import { parseEnumListFilter, parseTextFilter } from '../../paging/filters.js';
import { parsePageQuery } from '../../paging/page-query.js';

/** The query of `GET /shipments`: paging plus the filters `status` (comma list), `reference` and `tag`. */
export function parseShipmentQuery(query: Record<string, unknown>): { page: PageRequest; filters: ShipmentFilters } {
  const { page, filters } = parsePageQuery(query, ['status', 'reference', 'tag']);
  const { status, reference, tag } = filters;
  return {
    page,
    filters: {
      status: status === undefined ? undefined : parseEnumListFilter('status', status, ShipmentStatus),
      reference: reference === undefined ? undefined : parseTextFilter('reference', reference, 1, 200),
      tag: tag === undefined ? undefined : parseTextFilter('tag', tag, 1, 50),
    },
  };
}
