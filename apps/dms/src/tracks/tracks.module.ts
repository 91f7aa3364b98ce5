import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { DmsConfig } from '../config.js';
import { DMS_CONFIG } from '../tokens.js';
import { TrackRepository } from './track.repository.js';
import { TracksHandler } from './tracks.handler.js';
import { TracksService } from './tracks.service.js';

/** Shipment tracks from the readings and the assignment periods (docs/tracks.md). */
@Module({
  controllers: [TracksHandler],
  providers: [
    TracksService,
    {
      provide: TrackRepository,
      inject: [DataSource, DMS_CONFIG],
      useFactory: (dataSource: DataSource, config: DmsConfig) => new TrackRepository(dataSource, config.TRACK_QUERY_TIMEOUT_MS),
    },
  ],
})
export class TracksModule {}
