import { ApiPropertyOptional } from '@nestjs/swagger';
import { type ShipmentFilters, ShipmentStatus } from '@tracking/contracts';
import { PageQuery } from '../../paging/page-query.js';
import { enumList, IsEnumList, IsFilterLength } from '../../paging/query-rules.js';

/** The query of `GET /shipments`: paging plus the filters `status` (comma list), `reference` and `tag`. */
export class ListShipmentsQuery extends PageQuery {
  @ApiPropertyOptional({ description: 'One status, or several separated by commas (any of them).', type: 'string', example: 'Planned,InTransit' })
  @IsEnumList('status', ShipmentStatus)
  status?: string;

  @ApiPropertyOptional({ description: 'Exact reference.', type: 'string', minLength: 1, maxLength: 200 })
  @IsFilterLength('reference', 1, 200)
  reference?: string;

  @ApiPropertyOptional({ description: 'Shipments carrying this tag.', type: 'string', minLength: 1, maxLength: 50 })
  @IsFilterLength('tag', 1, 50)
  tag?: string;

  filters(): ShipmentFilters {
    return { status: enumList<ShipmentStatus>(this.status), reference: this.reference, tag: this.tag };
  }
}
