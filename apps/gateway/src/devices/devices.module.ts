import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { CredentialsController } from './credentials.controller.js';
import { DevicesController } from './devices.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [DevicesController, CredentialsController],
  providers: [AccountAccessGuard],
})
export class DevicesModule {}
