import { ApiPropertyOptional } from '@nestjs/swagger';
import { ParameterIssue, type ReadingFilters } from '@tracking/contracts';
import { DomainError, parseDateTime } from '@tracking/core';
import { PageQuery } from '../paging/page-query.js';
import { IsDateTimeFilter } from '../paging/query-rules.js';
import { DATE_TIME_INPUT_DESCRIPTION } from '../http/date-time.validator.js';

/** The query of `GET /devices/{id}/readings`: paging plus `from` and `to` on recordedAt (half-open). */
export class ListReadingsQuery extends PageQuery {
  @ApiPropertyOptional({ description: `Readings recorded at or after this instant. ${DATE_TIME_INPUT_DESCRIPTION}`, type: 'string', format: 'date-time' })
  @IsDateTimeFilter('from')
  from?: string;

  @ApiPropertyOptional({ description: `Readings recorded before this instant (not at it). ${DATE_TIME_INPUT_DESCRIPTION}`, type: 'string', format: 'date-time' })
  @IsDateTimeFilter('to')
  to?: string;

  filters(): ReadingFilters {
    const filters: ReadingFilters = {};
    const from = this.from === undefined ? undefined : parseDateTime(this.from)?.getTime();
    const to = this.to === undefined ? undefined : parseDateTime(this.to)?.getTime();
    if (from !== undefined) filters.from = from;
    if (to !== undefined) filters.to = to;
    if (from !== undefined && to !== undefined && to < from) {
      throw DomainError.invalidParameter('to', ParameterIssue.OutOfRange, 'to must not be before from.');
    }
    return filters;
  }
}
