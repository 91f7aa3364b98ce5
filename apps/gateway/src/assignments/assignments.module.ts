import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { AssignmentsController } from './assignments.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [AssignmentsController],
  providers: [AccountAccessGuard],
})
export class AssignmentsModule {}
