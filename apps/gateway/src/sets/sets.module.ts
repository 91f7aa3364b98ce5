import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { SetsController } from './sets.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [SetsController],
  providers: [AccountAccessGuard],
})
export class SetsModule {}
