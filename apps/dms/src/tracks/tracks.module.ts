import { Module } from '@nestjs/common';
import { TrackRepository } from './track.repository.js';
import { TracksHandler } from './tracks.handler.js';
import { TracksService } from './tracks.service.js';

/** Shipment tracks from the readings and the assignment periods (docs/tracks.md). */
@Module({
  controllers: [TracksHandler],
  providers: [TracksService, TrackRepository],
})
export class TracksModule {}
