import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { ItemsController } from './items.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [ItemsController],
  providers: [AccountAccessGuard],
})
export class ItemsModule {}
