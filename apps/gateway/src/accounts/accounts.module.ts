import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { AccountsController } from './accounts.controller.js';

/** `GET /v1/accounts`: the accounts a token may use (AuthModule exports the identity repositories). */
@Module({
  imports: [AuthModule],
  controllers: [AccountsController],
})
export class AccountsModule {}
