import { ApiPropertyOptional } from '@nestjs/swagger';
import { type AlertFilters, AlertKind, AlertStatus } from '@tracking/contracts';
import { PageQuery } from '../paging/page-query.js';
import { enumList, IsEnumList, IsUuidFilter } from '../paging/query-rules.js';

/** The query of `GET /alerts`: paging plus `status`, `kind` (comma lists), `shipmentId` and `deviceId`. */
export class ListAlertsQuery extends PageQuery {
  @ApiPropertyOptional({ description: 'One status, or several separated by commas (any of them).', type: 'string', example: 'Open' })
  @IsEnumList('status', AlertStatus)
  status?: string;

  @ApiPropertyOptional({
    description: `One kind, or several separated by commas (any of them): ${Object.values(AlertKind).join(', ')}.`,
    type: 'string',
    example: 'TemperatureHigh,TemperatureLow',
  })
  @IsEnumList('kind', AlertKind)
  kind?: string;

  @ApiPropertyOptional({ description: 'Alerts of this shipment.', type: 'string', format: 'uuid' })
  @IsUuidFilter('shipmentId')
  shipmentId?: string;

  @ApiPropertyOptional({ description: 'Alerts raised by the readings of this device.', type: 'string', format: 'uuid' })
  @IsUuidFilter('deviceId')
  deviceId?: string;

  filters(): AlertFilters {
    const filters: AlertFilters = {};
    const status = enumList<AlertStatus>(this.status);
    if (status) filters.status = status;
    const kind = enumList<AlertKind>(this.kind);
    if (kind) filters.kind = kind;
    if (this.shipmentId !== undefined) filters.shipmentId = this.shipmentId.toLowerCase();
    if (this.deviceId !== undefined) filters.deviceId = this.deviceId.toLowerCase();
    return filters;
  }
}
