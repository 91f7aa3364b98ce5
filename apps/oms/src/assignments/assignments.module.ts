import { Module } from '@nestjs/common';
import { AlertStoreModule } from '../alerts/alert-store.module.js';
import { SetsModule } from '../sets/sets.module.js';
import { AssignmentsHandler } from './assignments.handler.js';
import { AssignmentsService } from './assignments.service.js';

@Module({
  imports: [SetsModule, AlertStoreModule],
  controllers: [AssignmentsHandler],
  providers: [AssignmentsService],
})
export class AssignmentsModule {}
