import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type IngestReadingsRequest, type IngestResult, type ListReadingsRequest, type ReadingPage, Subjects } from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { ReadingsService } from './readings.service.js';

@Controller()
export class ReadingsHandler {
  constructor(private readonly readings: ReadingsService) {}

  @Handles(Subjects.dms.readings.ingest)
  ingest(@Payload() request: IngestReadingsRequest): Promise<IngestResult> {
    return this.readings.ingest(request);
  }

  @Handles(Subjects.dms.readings.list)
  list(@Payload() request: ListReadingsRequest): Promise<ReadingPage> {
    return this.readings.list(request);
  }
}
