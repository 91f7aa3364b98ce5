import { ApiPropertyOptional } from '@nestjs/swagger';
import { type DeviceFilters, DeviceStatus } from '@tracking/contracts';
import { PageQuery } from '../../paging/page-query.js';
import { enumList, IsEnumList, IsFilterLength, IsUuidFilter } from '../../paging/query-rules.js';

/** The query of `GET /devices`: paging plus the filters `status` (comma list), `serialNumber` and `shipmentId`. */
export class ListDevicesQuery extends PageQuery {
  @ApiPropertyOptional({
    description: `One status, or several separated by commas (any of them): ${Object.values(DeviceStatus).join(', ')}.`,
    type: 'string',
    example: 'Available,Assigned',
  })
  @IsEnumList('status', DeviceStatus)
  status?: string;

  @ApiPropertyOptional({ description: 'Exact serial number.', type: 'string', minLength: 1, maxLength: 100 })
  @IsFilterLength('serialNumber', 1, 100)
  serialNumber?: string;

  @ApiPropertyOptional({ description: 'Devices assigned to this shipment.', type: 'string', format: 'uuid' })
  @IsUuidFilter('shipmentId')
  shipmentId?: string;

  filters(): DeviceFilters {
    return {
      status: enumList<DeviceStatus>(this.status),
      serialNumber: this.serialNumber,
      // Any case is accepted and answered lower-case.
      shipmentId: this.shipmentId?.toLowerCase(),
    };
  }
}
