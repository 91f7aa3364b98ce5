import { ApiPropertyOptional } from '@nestjs/swagger';
import { type EventFilters, EventType, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { PageQuery } from '../paging/page-query.js';
import { enumList, IsEnumList, IsUuidFilter } from '../paging/query-rules.js';

/** The query of `GET /events`: paging plus `type` (one or a comma list) and `after` (an event id). */
export class ListEventsQuery extends PageQuery {
  @ApiPropertyOptional({
    description: `One event type, or several separated by commas: ${Object.values(EventType).join(', ')}.`,
    type: 'string',
    example: 'shipment.created,shipment.delivered',
  })
  @IsEnumList('type', EventType)
  type?: string;

  @ApiPropertyOptional({
    description:
      'The id of an event the client has seen: the page starts right after it. Not with `cursor`. An id the feed does not ' +
      'hold (unknown, or past EVENTS_RETENTION_DAYS) is 400 InvalidParameter, issue EventNotFound: resync from the resources.',
    type: 'string',
    format: 'uuid',
  })
  @IsUuidFilter('after')
  after?: string;

  filters(): EventFilters {
    if (this.after !== undefined && this.cursor !== undefined) {
      throw DomainError.invalidParameter('after', ParameterIssue.InvalidFormat, 'after and cursor cannot be combined: after places the first page, the cursor the next ones.');
    }
    const filters: EventFilters = {};
    const type = enumList<EventType>(this.type);
    if (type) filters.type = type;
    if (this.after !== undefined) filters.after = this.after.toLowerCase();
    return filters;
  }
}
