import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { type AssignmentRequest, Subjects } from '@tracking/contracts';
import { AssignmentsService } from './assignments.service.js';

@Controller()
export class AssignmentsHandler {
  constructor(private readonly assignments: AssignmentsService) {}

  @MessagePattern(Subjects.oms.assignments.assign)
  async assign(@Payload() request: AssignmentRequest): Promise<null> {
    await this.assignments.assign(request);
    // Not `undefined`: Nest's packet would then carry no `response`, which the gateway treats as 502.
    return null;
  }

  @MessagePattern(Subjects.oms.assignments.unassign)
  async unassign(@Payload() request: AssignmentRequest): Promise<null> {
    await this.assignments.unassign(request);
    return null;
  }
}
