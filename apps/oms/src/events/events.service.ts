import { Injectable } from '@nestjs/common';
import { type EventPage, type ListEventsRequest, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { JsonReply } from '@tracking/messaging';
import { EventRepository } from './event.repository.js';

@Injectable()
export class EventsService {
  constructor(private readonly events: EventRepository) {}

  /**
   * One page of the account's feed. `after` names an event the client saw; one the feed does not hold
   * (never this account's, or deleted by retention) is 400 EventNotFound, so the client knows it has
   * missed events and must resync rather than silently skip them.
   */
  async list(request: ListEventsRequest): Promise<JsonReply<EventPage>> {
    const { after } = request.filters;
    let afterSeq: string | undefined;
    if (after !== undefined) {
      afterSeq = await this.events.positionOf(request, after);
      if (afterSeq === undefined) {
        throw DomainError.invalidParameter('after', ParameterIssue.EventNotFound, 'The feed holds no such event (unknown, or past its retention): resync from the resources.');
      }
    }
    return new JsonReply(await this.events.findPageJson(request, request.page, request.filters, afterSeq));
  }
}
