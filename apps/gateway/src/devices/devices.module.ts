import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { DevicesController } from './devices.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [DevicesController],
  providers: [AccountAccessGuard],
})
export class DevicesModule {}
