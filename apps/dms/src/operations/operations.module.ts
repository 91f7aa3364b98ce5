import { Module } from '@nestjs/common';
import { DevicesModule } from '../devices/devices.module.js';
import { OperationChunkRepository } from './operation-chunk.repository.js';
import { OperationChunksHandler } from './operation-chunks.handler.js';
import { OperationChunksService } from './operation-chunks.service.js';

/** The DMS's part of bulk operations: deciding chunks of entries about devices. */
@Module({
  imports: [DevicesModule],
  controllers: [OperationChunksHandler],
  providers: [OperationChunksService, OperationChunkRepository],
})
export class OperationsModule {}
