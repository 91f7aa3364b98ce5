import { Module } from '@nestjs/common';
import { SetsModule } from '../sets/sets.module.js';
import { AssignmentsHandler } from './assignments.handler.js';
import { AssignmentsService } from './assignments.service.js';

@Module({
  imports: [SetsModule],
  controllers: [AssignmentsHandler],
  providers: [AssignmentsService],
})
export class AssignmentsModule {}
