import { ApiPropertyOptional } from '@nestjs/swagger';
import { type ShipmentFilters, ShipmentStatus } from '@tracking/contracts';
import { parseDateTime } from '@tracking/core';
import { DATE_TIME_INPUT_DESCRIPTION } from '../../http/date-time.validator.js';
import { PageQuery } from '../../paging/page-query.js';
import { enumList, IsDateTimeFilter, IsEnumList, IsFilterLength, IsTrueOrFalse } from '../../paging/query-rules.js';

/**
 * The query of `GET /shipments`: paging plus the filters `status` (comma list), `reference`, `tag`, and on
 * the estimated arrival `arrivingBefore`, `arrivingAfter` and `late` (docs/eta.md).
 */
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

  @ApiPropertyOptional({
    description: `Shipments whose eta.arrivalAt is before this instant (those without eta never match). ${DATE_TIME_INPUT_DESCRIPTION}`,
    type: 'string',
    format: 'date-time',
  })
  @IsDateTimeFilter('arrivingBefore')
  arrivingBefore?: string;

  @ApiPropertyOptional({
    description: `Shipments whose eta.arrivalAt is at or after this instant (those without eta never match). ${DATE_TIME_INPUT_DESCRIPTION}`,
    type: 'string',
    format: 'date-time',
  })
  @IsDateTimeFilter('arrivingAfter')
  arrivingAfter?: string;

  @ApiPropertyOptional({
    description:
      'true: shipments whose eta.arrivalAt is after their plannedArrivalAt; false: those whose eta.arrivalAt is at or before it ' +
      '(a shipment without eta or plan matches neither). Exactly true or false.',
    type: 'boolean',
  })
  @IsTrueOrFalse('late')
  late?: string;

  filters(): ShipmentFilters {
    const instant = (value: string | undefined) => (value === undefined ? undefined : parseDateTime(value)?.toISOString());
    return {
      status: enumList<ShipmentStatus>(this.status),
      reference: this.reference,
      tag: this.tag,
      arrivingBefore: instant(this.arrivingBefore),
      arrivingAfter: instant(this.arrivingAfter),
      late: this.late === undefined ? undefined : this.late === 'true',
    };
  }
}
