import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { Subjects, type TrackReply, type TrackRequest } from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { TracksService } from './tracks.service.js';

@Controller()
export class TracksHandler {
  constructor(private readonly tracks: TracksService) {}

  @Handles(Subjects.dms.tracks.get)
  get(@Payload() request: TrackRequest): Promise<TrackReply> {
    return this.tracks.get(request);
  }
}
