import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type CreateOperationRequest,
  type ListOperationResultsRequest,
  type ListOperationsRequest,
  type Operation,
  type OperationPage,
  type OperationRequest,
  type OperationResultPage,
  Subjects,
  type Versioned,
} from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { currentRequestId } from '@tracking/core';
import { OperationsService } from './operations.service.js';

@Controller()
export class OperationsHandler {
  constructor(private readonly operations: OperationsService) {}

  @Handles(Subjects.oms.operations.create)
  create(@Payload() request: CreateOperationRequest): Promise<Versioned<Operation>> {
    // The request id came in the message's header; the job takes it on to the worker's log lines.
    return this.operations.create(request, currentRequestId());
  }

  @Handles(Subjects.oms.operations.list)
  list(@Payload() request: ListOperationsRequest): Promise<OperationPage> {
    return this.operations.list(request);
  }

  @Handles(Subjects.oms.operations.get)
  get(@Payload() request: OperationRequest): Promise<Versioned<Operation>> {
    return this.operations.get(request);
  }

  @Handles(Subjects.oms.operations.results)
  results(@Payload() request: ListOperationResultsRequest): Promise<OperationResultPage> {
    return this.operations.results(request);
  }

  @Handles(Subjects.oms.operations.cancel)
  async cancel(@Payload() request: OperationRequest): Promise<void> {
    await this.operations.cancel(request);
  }
}
