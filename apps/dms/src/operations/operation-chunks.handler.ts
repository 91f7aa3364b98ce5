import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  type LinkEntry,
  type OperationChunk,
  type OperationChunkResult,
  type PurgeOperationsRequest,
  type RetireEntry,
  type SettleOperationRequest,
  Subjects,
} from '@tracking/contracts';
import { OperationChunksService } from './operation-chunks.service.js';

/** Chunks of bulk operations, sent by the OMS's workers. */
@Controller()
export class OperationChunksHandler {
  constructor(private readonly chunks: OperationChunksService) {}

  @MessagePattern(Subjects.dms.operations.link)
  link(@Payload() request: OperationChunk<LinkEntry>): Promise<OperationChunkResult> {
    return this.chunks.link(request);
  }

  @MessagePattern(Subjects.dms.operations.retire)
  retire(@Payload() request: OperationChunk<RetireEntry>): Promise<OperationChunkResult> {
    return this.chunks.retire(request);
  }

  @MessagePattern(Subjects.dms.operations.purge)
  async purge(@Payload() request: PurgeOperationsRequest): Promise<null> {
    await this.chunks.purge(request);
    return null;
  }

  @MessagePattern(Subjects.dms.operations.settle)
  settle(@Payload() request: SettleOperationRequest): Promise<OperationChunkResult> {
    return this.chunks.settle(request);
  }
}
