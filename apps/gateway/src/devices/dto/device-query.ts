import { type DeviceFilters, DeviceStatus, type PageRequest } from '@tracking/contracts';
import { parseEnumListFilter, parseTextFilter, parseUuidFilter } from '../../paging/filters.js';
import { parsePageQuery } from '../../paging/page-query.js';

/** The query of `GET /devices`: paging plus the filters `status` (comma list), `serialNumber` and `shipmentId`. */
export function parseDeviceQuery(query: Record<string, unknown>): { page: PageRequest; filters: DeviceFilters } {
  const { page, filters } = parsePageQuery(query, ['status', 'serialNumber', 'shipmentId']);
  const { status, serialNumber, shipmentId } = filters;
  return {
    page,
    filters: {
      status: status === undefined ? undefined : parseEnumListFilter('status', status, DeviceStatus),
      serialNumber: serialNumber === undefined ? undefined : parseTextFilter('serialNumber', serialNumber, 1, 100),
      shipmentId: shipmentId === undefined ? undefined : parseUuidFilter('shipmentId', shipmentId),
    },
  };
}
