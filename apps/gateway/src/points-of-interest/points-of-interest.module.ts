import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { PointsOfInterestController } from './points-of-interest.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [PointsOfInterestController],
  providers: [AccountAccessGuard],
})
export class PointsOfInterestModule {}
