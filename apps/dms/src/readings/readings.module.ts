import { Module } from '@nestjs/common';
import { CredentialsModule } from '../credentials/credentials.module.js';
import { DevicesModule } from '../devices/devices.module.js';
import { ReadingPartitions } from './reading-partitions.js';
import { ReadingRepository } from './reading.repository.js';
import { ReadingsHandler } from './readings.handler.js';
import { ReadingsStream } from './readings-stream.js';
import { ReadingsService } from './readings.service.js';

@Module({
  imports: [DevicesModule, CredentialsModule],
  controllers: [ReadingsHandler],
  providers: [ReadingsService, ReadingRepository, ReadingPartitions, ReadingsStream],
  exports: [ReadingPartitions],
})
export class ReadingsModule {}
