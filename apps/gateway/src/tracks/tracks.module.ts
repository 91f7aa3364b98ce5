import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { TracksController } from './tracks.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [TracksController],
  providers: [AccountAccessGuard],
})
export class TracksModule {}
