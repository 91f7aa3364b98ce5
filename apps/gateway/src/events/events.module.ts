import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { EventsController } from './events.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [EventsController],
  providers: [AccountAccessGuard],
})
export class EventsModule {}
