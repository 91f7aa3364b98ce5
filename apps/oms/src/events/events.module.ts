import { Module } from '@nestjs/common';
import { EventFeedConsumer } from './event-feed.consumer.js';
import { EventRepository } from './event.repository.js';
import { EventRetention } from './event-retention.js';
import { EventsHandler } from './events.handler.js';
import { EventsService } from './events.service.js';

/** The account's event feed on the OMS service: `GET /events`, filled from the events stream. */
@Module({
  controllers: [EventsHandler],
  providers: [EventsService, EventRepository, EventFeedConsumer],
})
export class EventsModule {}

/** The feed's retention, on the workers. */
@Module({
  providers: [EventRepository, EventRetention],
})
export class EventRetentionModule {}
