import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type AssignmentRequest, Subjects } from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { AssignmentsService } from './assignments.service.js';

@Controller()
export class AssignmentsHandler {
  constructor(private readonly assignments: AssignmentsService) {}

  @Handles(Subjects.oms.assignments.assign)
  async assign(@Payload() request: AssignmentRequest): Promise<void> {
    await this.assignments.assign(request);
  }

  @Handles(Subjects.oms.assignments.unassign)
  async unassign(@Payload() request: AssignmentRequest): Promise<void> {
    await this.assignments.unassign(request);
  }
}
