import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { WebhooksController } from './webhooks.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [WebhooksController],
  providers: [AccountAccessGuard],
})
export class WebhooksModule {}
