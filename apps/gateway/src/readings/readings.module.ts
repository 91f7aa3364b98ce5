import { Module } from '@nestjs/common';
import { AccountAccessGuard } from '../accounts/account-access.guard.js';
import { AuthModule } from '../auth/auth.module.js';
import { IngestAdmission } from '../protection/ingest-admission/ingest-admission.js';
import { ReadingsController } from './readings.controller.js';

@Module({
  imports: [AuthModule],
  controllers: [ReadingsController],
  providers: [AccountAccessGuard, IngestAdmission],
})
export class ReadingsModule {}
