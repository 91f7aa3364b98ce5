import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { ShipmentsController } from './shipments.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [ShipmentsController],
  providers: [AccountAccessGuard],
})
export class ShipmentsModule {}
