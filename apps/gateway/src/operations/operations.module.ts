import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { OperationsController } from './operations.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [OperationsController],
  providers: [AccountAccessGuard],
})
export class OperationsModule {}
