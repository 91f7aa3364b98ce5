import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type EventPage, type ListEventsRequest, Subjects } from '@tracking/contracts';
import { Handles, JsonReply } from '@tracking/messaging';
import { EventsService } from './events.service.js';

@Controller()
export class EventsHandler {
  constructor(private readonly events: EventsService) {}

  @Handles(Subjects.oms.events.list)
  list(@Payload() request: ListEventsRequest): Promise<JsonReply<EventPage>> {
    return this.events.list(request);
  }
}
