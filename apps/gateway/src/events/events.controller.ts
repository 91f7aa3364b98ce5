import { Get, Query, Req } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type AccountScope, type EventPage, Subjects } from '@tracking/contracts';
import type { FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { Scope } from '../accounts/account-scope.decorator.js';
import { ApiAccountErrors } from '../http/api-responses.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { EventPageDto } from './event.dto.js';
import { ListEventsQuery } from './event-query.js';

/** The account's event feed: every change, in the order the OMS recorded it. */
@ApiTags('Events')
@AccountController('')
@ApiAccountErrors()
export class EventsController {
  constructor(private readonly services: ServiceClient) {}

  @Get('events')
  @ApiOperation({
    summary: "List the account's events in the order they were recorded, with cursor paging",
    description:
      'The same events, with the same ids, that webhooks receive: a client may poll this feed instead. Kept ' +
      'EVENTS_RETENTION_DAYS (default 30). Events reach the feed within moments of their change (through the events stream).',
  })
  @ApiOkResponse({ type: EventPageDto, description: 'The events under `items`, next to `metadata`.' })
  list(@Scope() scope: AccountScope, @Query() query: ListEventsQuery, @Req() request: FastifyRequest): Promise<EventPage> {
    const filters = query.filters();
    return this.services.call(Subjects.oms.events.list, { ...scope, page: query.pageRequest(), filters }, request);
  }
}
