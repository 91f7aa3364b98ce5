import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type LinkEntry,
  type OperationChunk,
  type OperationChunkResult,
  type PurgeOperationsRequest,
  type RetireEntry,
  type SettleOperationRequest,
  Subjects,
} from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { OperationChunksService } from './operation-chunks.service.js';

/** Chunks of bulk operations, sent by the OMS's workers. */
@Controller()
export class OperationChunksHandler {
  constructor(private readonly chunks: OperationChunksService) {}

  @Handles(Subjects.dms.operations.link)
  link(@Payload() request: OperationChunk<LinkEntry>): Promise<OperationChunkResult> {
    return this.chunks.link(request);
  }

  @Handles(Subjects.dms.operations.retire)
  retire(@Payload() request: OperationChunk<RetireEntry>): Promise<OperationChunkResult> {
    return this.chunks.retire(request);
  }

  @Handles(Subjects.dms.operations.purge)
  async purge(@Payload() request: PurgeOperationsRequest): Promise<void> {
    await this.chunks.purge(request);
  }

  @Handles(Subjects.dms.operations.settle)
  settle(@Payload() request: SettleOperationRequest): Promise<OperationChunkResult> {
    return this.chunks.settle(request);
  }
}
