import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { AlertsController } from './alerts.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [AlertsController],
  providers: [AccountAccessGuard],
})
export class AlertsModule {}
