import { type OperationFilters, OperationResultStatus, OperationStatus, OperationType, type PageRequest } from '@tracking/contracts';
import { parseEnumListFilter } from '../paging/filters.js';
import { parsePageQuery } from '../paging/page-query.js';

/** The query of `GET /operations`: paging plus the filters `type` and `status` (each one value or a comma list). */
export function parseOperationQuery(query: Record<string, unknown>): { page: PageRequest; filters: OperationFilters } {
  const { page, filters } = parsePageQuery(query, ['type', 'status']);
  return {
    page,
    filters: {
      type: filters.type === undefined ? undefined : parseEnumListFilter('type', filters.type, OperationType),
      status: filters.status === undefined ? undefined : parseEnumListFilter('status', filters.status, OperationStatus),
    },
  };
}

/** The query of `GET /operations/{id}/results`: paging plus the filter `status` (Succeeded or Failed). */
export function parseOperationResultsQuery(query: Record<string, unknown>): { page: PageRequest; status?: OperationResultStatus } {
  const { page, filters } = parsePageQuery(query, ['status']);
  if (filters.status === undefined) return { page };
  const [status, ...more] = parseEnumListFilter('status', filters.status, OperationResultStatus);
  // One status only: both together are the same as none.
  if (status === undefined || more.length > 0) return { page };
  return { page, status };
}
